// The inspector on a world of 1,000,000 entities (issue 15: "the page stays responsive on a
// world of 1,000,000 entities; it only ever fetches pages, never everything"). One test, kept
// short for CI's two cores: the world is built once with `ecsdb demo` (no ticks), then the page
// is browsed while every WebSocket message it receives and every long task is recorded.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, startServer, launchBrowser, openInspector, tableCells } from '../harness.js';

const ENTITIES = 1_000_000;
/** No message the page receives may be bigger than this (a page of rows is a few KiB). */
const MAX_MESSAGE_BYTES = 1024 * 1024;
/**
 * A main-thread task longer than this while browsing would be felt. Page work here is a few
 * milliseconds; the margin is for a CI machine whose CPU is busy (a starved renderer's tasks
 * last long in wall time while doing little).
 */
const MAX_TASK_MS = 500;

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

test('on a 1,000,000-entity world the page only fetches pages and stays responsive', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsdb-inspector-big-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const world = path.join(dir, 'big.ecsdb');
  execFileSync(BIN, ['demo', '--entities', String(ENTITIES), '--ticks', '0', '--out', world], { stdio: 'ignore' });
  const server = await startServer(world);
  cleanups.push(() => server.stop());
  const browser = await launchBrowser();
  cleanups.push(() => browser.close());

  // Every frame the page receives, from the first (the socket lives in a worker; Chromium
  // reports its frames to the page all the same).
  const received = [];
  const { page, problems } = await openInspector(browser, server.url, {
    beforeLoad: async (p) => {
      p.on('websocket', (ws) => ws.on('framereceived', (frame) => received.push(Buffer.byteLength(frame.payload))));
      // Long tasks of the main thread, with their start times.
      await p.addInitScript(() => {
        window.longTasks = [];
        new PerformanceObserver((list) => list.getEntries().forEach((e) => window.longTasks.push([e.startTime, e.duration])))
          .observe({ type: 'longtask', buffered: true });
      });
    },
  });
  const browsingFrom = await page.evaluate(() => performance.now());

  // The counts: the top bar and the schema's components.
  await page.locator('#fact-entities', { hasText: '1,000,000' }).waitFor();
  const schema = await server.rpc('schema');
  for (const c of schema.components.filter((x) => ['Position', 'Velocity', 'Player'].includes(x.name))) {
    const summary = page.locator('[data-testid="schema"] summary', { has: page.locator('.comp-name', { hasText: new RegExp(`^${c.name}$`) }) });
    assert.equal((await summary.locator('.num').textContent()).trim(), c.entities.toLocaleString('en-US'));
  }

  // The entity list: 50 a page, the total counted by the server, and the next page.
  await page.getByRole('tab', { name: 'Entities' }).click();
  const list = page.locator('[data-testid="entity-list"] button');
  await list.first().waitFor();
  assert.equal(await list.count(), 50);
  await page.locator('#entity-range', { hasText: '1–50 of 1,000,000' }).waitFor({ timeout: 15000 });
  const firstPage = await list.evaluateAll((bs) => bs.map((b) => b.dataset.id));
  await page.click('#entity-next');
  await page.locator('#entity-range', { hasText: /^51–100/ }).waitFor();
  const secondPage = await list.evaluateAll((bs) => bs.map((b) => b.dataset.id));
  assert.equal(secondPage.length, 50);
  assert.equal(secondPage.filter((id) => firstPage.includes(id)).length, 0);
  // An entity of that page opens with its components.
  await list.first().click();
  await page.locator('[data-testid="entity-view"] .comp-card', { hasText: 'Position' }).waitFor();

  // A query over every entity shows its first page (100 rows) and says there are more.
  await page.getByRole('tab', { name: 'Query' }).click();
  await page.fill('[data-testid="query-input"]', 'SELECT entity, Position.x, Health.hp FROM Position, Health');
  await page.click('[data-testid="run-query"]');
  await page.locator('#result-range', { hasText: 'rows 1–100' }).waitFor({ timeout: 15000 });
  assert.equal((await tableCells(page, 'result-table')).length, 100);
  assert.equal(await page.locator('#result-next').isDisabled(), false);
  await page.click('#result-next');
  await page.locator('#result-range', { hasText: 'rows 101–200' }).waitFor({ timeout: 15000 });

  await page.waitForTimeout(1200); // a stats and a schema poll more
  const longTasks = await page.evaluate((from) => window.longTasks.filter(([start]) => start >= from), browsingFrom);
  const biggest = Math.max(...received);
  console.log(`${received.length} messages received, the biggest ${biggest} bytes; ${longTasks.length} long tasks while browsing, the longest ${Math.max(0, ...longTasks.map(([, d]) => d)).toFixed(0)} ms`);
  assert.ok(received.length > 0, 'no WebSocket frame was seen');
  assert.ok(biggest <= MAX_MESSAGE_BYTES, `a message of ${biggest} bytes`);
  assert.deepEqual(longTasks.filter(([, d]) => d > MAX_TASK_MS), []);
  assert.deepEqual(problems, []);
});
