import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_SETTINGS, decodeControllerConfig } from '../../src/config/controller-config.ts';

const minimal = { watch: [{ name: 'ingresses', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' }], templates: { 'haproxy.cfg': 'global\n' } };

describe('decodeControllerConfig', () => {
  it('fills in the documented defaults', () => {
    const result = decodeControllerConfig(minimal);
    assert.ok(result.ok);
    assert.deepEqual(result.value.settings, DEFAULT_SETTINGS);
    assert.equal(result.value.settings.debounceMs, 500);
    assert.equal(result.value.settings.minDeployIntervalMs, 2000);
    assert.equal(result.value.settings.driftIntervalMs, 60000);
    assert.equal(result.value.settings.confirmMaxWaitMs, 10000);
    assert.deepEqual(result.value.values, {});
  });

  it('reads durations as milliseconds or as strings with a unit', () => {
    const result = decodeControllerConfig({ ...minimal, settings: { debounce: '250ms', minDeployInterval: '3s', driftInterval: '1.5m', deployTimeout: 1000, confirmMaxWait: '4s', maxParallel: 4 } });
    assert.ok(result.ok);
    assert.equal(result.value.settings.debounceMs, 250);
    assert.equal(result.value.settings.minDeployIntervalMs, 3000);
    assert.equal(result.value.settings.driftIntervalMs, 90000);
    assert.equal(result.value.settings.deployTimeoutMs, 1000);
    assert.equal(result.value.settings.confirmMaxWaitMs, 4000);
    assert.equal(result.value.settings.maxParallel, 4);
  });

  it('names the path of every bad field', () => {
    const result = decodeControllerConfig({
      watch: [{ name: 'ingresses', apiVersion: 'v1' }, { name: 'Bad-Name', apiVersion: 'v1', resource: 'x' }],
      templates: { 'haproxy.cfg': 3 },
      settings: { debounce: 'soon' },
    });
    assert.ok(!result.ok);
    assert.deepEqual(
      result.errors.map((e) => e.path),
      ['watch[0].resource', 'watch[1].name', 'templates["haproxy.cfg"]', 'settings.debounce'],
    );
    assert.match(result.errors[3]!.message, /"soon" is not a duration/);
  });

  it('rejects a set watched twice and a negative or fractional parallelism', () => {
    const result = decodeControllerConfig({ ...minimal, watch: [minimal.watch[0], minimal.watch[0]], settings: { maxParallel: 1.5 } });
    assert.ok(!result.ok);
    assert.deepEqual(result.errors.map((e) => e.path), ['watch[1].name', 'settings.maxParallel']);
  });

  it('reads canary rollout with its defaults, and leaves it off without it', () => {
    const off = decodeControllerConfig(minimal);
    assert.ok(off.ok && off.value.settings.canary === undefined);
    const on = decodeControllerConfig({ ...minimal, settings: { canary: { checkFor: '30s', probe: { port: 80 } } } });
    assert.ok(on.ok);
    assert.deepEqual(on.value.settings.canary, { checkForMs: 30_000, intervalMs: 5_000, probe: { port: 80, path: '/', scheme: 'http', expectStatus: [], timeoutMs: 2_000 } });
    const full = decodeControllerConfig({
      ...minimal,
      settings: { canary: { checkFor: '1m', interval: '1s', probe: { port: 8443, scheme: 'https', path: '/healthz?deep=1', host: 'shop.example.com', expectStatus: [200, 204], timeout: '500ms' } } },
    });
    assert.ok(full.ok);
    assert.deepEqual(full.value.settings.canary, {
      checkForMs: 60_000,
      intervalMs: 1_000,
      probe: { port: 8443, path: '/healthz?deep=1', host: 'shop.example.com', scheme: 'https', expectStatus: [200, 204], timeoutMs: 500 },
    });
  });

  it('names each bad canary field: a missing check time, a port, a path or host that could inject, a status, a probe slower than the interval', () => {
    const missing = decodeControllerConfig({ ...minimal, settings: { canary: { interval: '1s' } } });
    assert.ok(!missing.ok);
    assert.deepEqual(missing.errors.map((e) => e.path), ['settings.canary.checkFor']);
    const result = decodeControllerConfig({
      ...minimal,
      settings: { canary: { checkFor: 0, interval: '1s', probe: { port: 70000, path: 'healthz\r\nX: 1', host: 'a b', expectStatus: [200, 700], timeout: '2s' } } },
    });
    assert.ok(!result.ok);
    assert.deepEqual(
      result.errors.map((e) => e.path),
      ['settings.canary.checkFor', 'settings.canary.probe.port', 'settings.canary.probe.path', 'settings.canary.probe.host', 'settings.canary.probe.expectStatus[1]', 'settings.canary.probe.timeout'],
    );
    assert.match(result.errors[5]!.message, /at most settings\.canary\.interval \(1000ms\)/);
  });

  it('compiles every JSONPath and selector when it loads, naming the field of each one that does not', () => {
    const watch = (extra: Record<string, unknown>, name = 'slices') => ({ name, apiVersion: 'discovery.k8s.io/v1', resource: 'endpointslices', ...extra });
    const result = decodeControllerConfig({
      ...minimal,
      watch: [
        minimal.watch[0],
        watch({ indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"'] }),
        watch({ fieldSelector: 'spec.x[?(@.y=1=2' }, 'other'),
        watch({ labelSelector: 'app in (a' }, 'labelled'),
        watch({ referencedBy: [{ set: 'ingresses', path: 'spec.tls[*].secretName' }] }, 'secrets'),
        watch({ indexBy: ['$..name', '$.spec.ports[?@.port > 80].name'] }, 'fine'),
      ],
    });
    assert.ok(!result.ok);
    assert.deepEqual(result.errors.map((e) => e.path), ['watch[1].indexBy[1]', 'watch[2].fieldSelector', 'watch[3].labelSelector', 'watch[4].referencedBy[0].path']);
    assert.match(result.errors[0]!.message, /^\$\.metadata\.labels\["kubernetes\.io\/service-name" is not a JSONPath \(RFC 9535\): unclosed bracketed selection/);
    assert.match(result.errors[3]!.message, /expected '\$'/);
  });

  it('accepts the paths of the shipped configuration', () => {
    const result = decodeControllerConfig({
      ...minimal,
      watch: [
        minimal.watch[0],
        { name: 'slices', apiVersion: 'discovery.k8s.io/v1', resource: 'endpointslices', indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'], fieldSelector: 'metadata.namespace!=kube-system' },
        { name: 'secrets', apiVersion: 'v1', resource: 'secrets', referencedBy: [{ set: 'ingresses', path: '$.spec.tls[*].secretName' }, { set: 'ingresses', path: '$.metadata.annotations["haprx.io/auth-secret"]' }] },
      ],
    });
    assert.ok(result.ok, JSON.stringify(!result.ok && result.errors));
  });

  it('rejects something that is not an object at all', () => {
    const result = decodeControllerConfig('watch: everything');
    assert.ok(!result.ok);
    assert.equal(result.errors[0]!.path, '(root)');
  });
});
