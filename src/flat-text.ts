/**
 * A copy of a text as one flat string. V8 keeps a string made piece by piece (what
 * an ejs template writes, `+=` by `+=`) as a tree of its pieces, and a slice of a
 * string as a view that holds the whole of it. Either is cheap to make and costly to
 * keep: five server lines written by a template take about 1.8 KiB as a tree and
 * 300 bytes flat. Text that is kept across renders is copied flat once, here.
 *
 * Through JSON, which gives back every UTF-16 code unit as it was (a lone surrogate
 * too, which a round trip through UTF-8 would replace), and is the faster copy.
 */
export function flatText(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}
