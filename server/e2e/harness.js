// What every inspector test needs: the built `ecsdb` binary, a small world file, a real
// `ecsdb serve` on port 0, a JSON-RPC client for "another client", and headless Chromium.

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { parseJson, stringifyJson } from '../assets/js/json.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository root (server/e2e/../..). */
export const ROOT = path.resolve(here, '..', '..');
/** The `ecsdb` binary under test: $ECSDB_BIN, or the debug build. */
export const BIN = process.env.ECSDB_BIN || path.join(ROOT, 'target', 'debug', 'ecsdb');
/** Chromium: $CHROMIUM, or Debian's package. */
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
/** The flags this sandbox needs (no sandboxing as root, no GPU, no calls home). */
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'];

/** The test world: five named entities, a few components, two indexes. */
export const WORLD_SCRIPT = `
CREATE COMPONENT Name (value string);
CREATE COMPONENT Health (hp f32, max f32);
CREATE COMPONENT Position (x f32, y f32, z f32);
CREATE COMPONENT Team (name string);
CREATE COMPONENT Level (value i32);
CREATE COMPONENT Player;
CREATE COMPONENT Frozen;
SPAWN Name {value: 'ann'}, Health {hp: 10, max: 100}, Player, Team {name: 'red'}, Level {value: 3};
SPAWN Name {value: 'bob'}, Health {hp: 50.5, max: 100}, Position {x: 1, y: 2, z: 3}, Team {name: 'blue'};
SPAWN Name {value: 'cleo'}, Health {hp: 80, max: 120}, Player, Team {name: 'red'}, Level {value: 7}, Frozen;
SPAWN Name {value: 'dax'}, Position {x: -4, y: 0.5, z: 2};
SPAWN Name {value: 'eve'}, Health {hp: 0, max: 100}, Team {name: 'gold'};
CREATE INDEX ON Health (hp) USING btree;
CREATE INDEX ON Team (name) USING bitmap;
`;

/** A fresh directory holding `world.ecsdb` built from `script`. */
export function makeWorld(script = WORLD_SCRIPT) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsdb-inspector-'));
  const world = path.join(dir, 'world.ecsdb');
  execFileSync(BIN, ['exec', world, '-', '--quiet'], { input: script });
  return { dir, world, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** `ecsdb query WORLD TEXT --format json`, parsed (integers beyond 2^53 as BigInt). */
export function cliQuery(world, text) {
  return parseJson(execFileSync(BIN, ['query', world, text, '--format', 'json'], { encoding: 'utf8' }));
}

/**
 * Starts `ecsdb serve WORLD --port 0` and reads the URL from its first line of output.
 * Resolves `{url, origin, token, rpc(method, params), stop()}`.
 */
export async function startServer(world, { allowWrites = false, extra = [] } = {}) {
  const hz = extra.includes('--hz') ? [] : ['--hz', '0'];
  const args = ['serve', world, '--port', '0', ...hz, ...(allowWrites ? ['--allow-writes'] : []), ...extra];
  const child = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const lines = readline.createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ecsdb serve printed no URL in 20 s; stderr: ${stderr}`)), 20000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`ecsdb serve exited with ${code}: ${stderr}`)));
  });
  const parsed = new URL(url);
  const token = new URLSearchParams(parsed.hash.slice(1)).get('token');
  const origin = parsed.origin;
  return {
    url,
    origin,
    token,
    /**
     * Calls a method over `POST /rpc` as another client would; throws the JSON-RPC error.
     * Integers beyond 2^53 go and come back as BigInt (json.js, as the page reads them).
     */
    async rpc(method, params = {}) {
      const response = await fetch(`${origin}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: stringifyJson({ jsonrpc: '2.0', id: 1, method, params }),
      });
      const body = parseJson(await response.text());
      if (body.error) throw Object.assign(new Error(body.error.message), body.error);
      return body.result;
    },
    stop() {
      child.kill('SIGTERM');
      return new Promise((resolve) => {
        if (child.exitCode !== null) resolve();
        else child.once('exit', resolve);
      });
    },
  };
}

/** Headless Chromium as this machine runs it. */
export function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}

/**
 * A page on `url` that records every console error, page error, failed request and HTTP
 * error answer in `problems`. `beforeLoad(page)` runs before the page is loaded (to listen
 * to its WebSocket from the start, say).
 */
export async function openInspector(browser, url, { beforeLoad } = {}) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
  await beforeLoad?.(page);
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  await page.goto(url);
  await page.locator('#conn[data-state="connected"]').waitFor({ timeout: 15000 });
  await page.locator('[data-testid="schema"] .comp-name').first().waitFor(); // the schema arrived
  return { page, problems };
}

/** The text of every body cell of a table, row by row. */
export function tableCells(page, testid) {
  return page.locator(`[data-testid="${testid}"] tbody tr`).evaluateAll((rows) =>
    rows.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));
}

/** A JSON value as the page prints it in a cell. */
export function cellText(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(cellText).join(', ')}]`;
  if (typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${k}: ${cellText(v)}`).join(', ')}}`;
  return String(value);
}
