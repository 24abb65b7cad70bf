/**
 * No container engine runs here, so the Dockerfile is checked statically: pinned
 * bases, a non-root user, production dependencies only, and an entrypoint that the
 * build really produces.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { parse } from 'yaml';

const ROOT = new URL('../..', import.meta.url).pathname;

interface Stage {
  from: string;
  name?: string;
  instructions: { op: string; args: string }[];
}

async function stages(): Promise<Stage[]> {
  const text = (await readFile(`${ROOT}Dockerfile`, 'utf8')).replace(/\\\n/g, ' ');
  const result: Stage[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [op, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (op!.toUpperCase() === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)!;
      result.push({ from: m[1]!, ...(m[2] !== undefined && { name: m[2] }), instructions: [] });
    } else {
      result.at(-1)!.instructions.push({ op: op!.toUpperCase(), args });
    }
  }
  return result;
}

describe('Dockerfile', () => {
  it('is multi-stage, with every base image pinned to a version tag', async () => {
    const all = await stages();
    assert.ok(all.length >= 2, 'a build stage and a runtime stage');
    for (const stage of all) {
      assert.match(stage.from, /^[\w./-]+:\d+\.\d+\.\d+[\w.-]*$/, `${stage.from} is pinned to a full version tag`);
      assert.doesNotMatch(stage.from, /:latest$/);
    }
    assert.match(all.at(-1)!.from, /^node:24\.[\d.]+-\w+-slim$/, 'the final image is Node 24 slim');
  });

  it('installs Debian haproxy in the final image, for validation', async () => {
    const final = (await stages()).at(-1)!;
    assert.ok(final.instructions.some((i) => i.op === 'RUN' && /apt-get install .*\bhaproxy\b/.test(i.args)));
  });

  it('caps the V8 heap at a share of the container memory limit, which Node.js 24.6 and later read from the cgroup', async () => {
    const final = (await stages()).at(-1)!;
    const env = final.instructions.filter((i) => i.op === 'ENV').map((i) => i.args).join(' ');
    assert.match(env, /NODE_OPTIONS="?--max-old-space-size-percentage=\d+\b/);
    const [minor] = /^node:24\.(\d+)/.exec(final.from)!.slice(1).map(Number);
    assert.ok(minor! >= 6, `${final.from} has --max-old-space-size-percentage`);
  });

  it('gives the same runtime environment as the Deployment (heap options and malloc arenas), which the benchmarks measure with', async () => {
    const final = (await stages()).at(-1)!;
    const image = new Map([...final.instructions.filter((i) => i.op === 'ENV').map((i) => i.args).join(' ').matchAll(/(\w+)=("[^"]*"|\S+)/g)].map((m) => [m[1]!, m[2]!.replace(/^"|"$/g, '')]));
    const deployment = parse(await readFile(`${ROOT}k8s/base/deployment.yaml`, 'utf8')) as { spec: { template: { spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] } } } };
    const env = deployment.spec.template.spec.containers.find((c) => c.name === 'haprx')!.env ?? [];
    for (const name of ['NODE_OPTIONS', 'MALLOC_ARENA_MAX']) {
      const value = env.find((e) => e.name === name)?.value;
      assert.ok(value, `the Deployment sets ${name}`);
      assert.equal(image.get(name), value, `the image's ${name} is the Deployment's`);
    }
  });

  it('runs as a non-root user', async () => {
    const users = (await stages()).at(-1)!.instructions.filter((i) => i.op === 'USER');
    assert.equal(users.length, 1);
    assert.doesNotMatch(users[0]!.args, /^(root|0)(:|$)/);
  });

  it('copies no dev dependencies and no sources into the final image', async () => {
    const all = await stages();
    const build = all[0]!;
    assert.ok(build.instructions.some((i) => i.op === 'RUN' && /npm prune --omit=dev/.test(i.args)), 'the build stage prunes dev dependencies');
    const copies = all.at(-1)!.instructions.filter((i) => i.op === 'COPY');
    for (const copy of copies) {
      assert.doesNotMatch(copy.args, /\b(src|streams|test|marble-tests|bench)\b(?!\.)/, `${copy.args} copies sources or tests`);
      if (/node_modules/.test(copy.args)) assert.match(copy.args, new RegExp(`--from=${build.name}`), 'node_modules come from the pruned build stage');
    }
  });

  it('has an entrypoint the build produces, running `haprx run`', async () => {
    const final = (await stages()).at(-1)!;
    const entry = final.instructions.find((i) => i.op === 'ENTRYPOINT');
    assert.ok(entry);
    const argv = JSON.parse(entry.args) as string[];
    assert.equal(argv[0], 'node');
    assert.equal(argv.at(-1), 'run');
    // dist/<path>.js is compiled from <path>.ts by tsconfig.build.json.
    const compiled = argv[1]!;
    assert.match(compiled, /^dist\/(.+)\.js$/);
    const source = compiled.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    await readFile(`${ROOT}${source}`, 'utf8');
    const build = JSON.parse(await readFile(`${ROOT}tsconfig.build.json`, 'utf8')) as { include: string[] };
    assert.ok(build.include.some((dir) => source.startsWith(`${dir}/`)), `${source} is part of the build`);
    assert.ok(final.instructions.some((i) => i.op === 'COPY' && /--from=\w+ \/app\/dist/.test(i.args)), 'dist comes from the build stage');
  });

  it('ships the template library, which the controller loads by default', async () => {
    const final = (await stages()).at(-1)!;
    assert.ok(final.instructions.some((i) => i.op === 'COPY' && /^templates\s/.test(i.args)));
  });
});
