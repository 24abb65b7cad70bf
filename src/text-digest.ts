import { hash } from 'node:crypto';

/**
 * A digest of a text, for telling texts apart without keeping them: where thousands
 * of records are compared render after render (statuses, server sets, map entries),
 * their texts would be the larger part of what is kept. SHA-256, base64: 44 characters.
 */
export function textDigest(text: string): string {
  return hash('sha256', text, 'base64');
}
