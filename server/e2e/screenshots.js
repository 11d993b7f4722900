// Takes the inspector's screenshots for the docs (docs/inspector-*.png) on the demo world.
// Run: `npm run screenshots` (after `cargo build -p ecsdb-cli`; ECSDB_BIN picks the binary).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, ROOT, startServer, launchBrowser, openInspector } from './harness.js';

const ENTITIES = process.env.ENTITIES || '100000';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsdb-shots-'));
const world = path.join(dir, 'demo.ecsdb');
execFileSync(BIN, ['demo', '--entities', ENTITIES, '--ticks', '3', '--out', world], { stdio: 'ignore' });
const server = await startServer(world, { allowWrites: true, extra: (process.env.SERVE_ARGS || '').split(' ').filter(Boolean) });
const browser = await launchBrowser();
const out = (name) => path.join(ROOT, 'docs', `inspector-${name}.png`);
try {
  const { page, problems } = await openInspector(browser, server.url);
  await page.locator('#conn-mode', { hasText: 'writable' }).waitFor();
  await page.locator('#schema-components details summary').nth(2).click();
  await page.locator('#schema-components details summary').nth(0).click();

  await page.fill('[data-testid="query-input"]', "SELECT entity, Name.value, Level.value, Health.hp, Team.name\n  FROM Player\n  WHERE Health.hp > 50 AND Team.name IN ('red', 'blue')\n  ORDER BY Level.value DESC, Name.value");
  await page.click('[data-testid="run-query"]');
  await page.locator('[data-testid="result-table"] tbody tr').first().waitFor();
  await page.click('#explain-query');
  await page.locator('#explain-view li').first().waitFor();
  await page.screenshot({ path: out('query') });

  await page.fill('[data-testid="query-input"]', 'SELECT Name.value, avg(Helth.hp)\n  FROM Player GROUP BY Name.value');
  await page.press('[data-testid="query-input"]', 'Control+Enter');
  await page.locator('[data-testid="error"]').waitFor();
  await page.click('[data-testid="query-input"]');
  await page.keyboard.press('Control+End');
  await page.keyboard.type('\n  ORDER BY Level.');
  await page.locator('#completions li').first().waitFor();
  await page.screenshot({ path: out('error') });
  await page.keyboard.press('Escape');

  await page.getByRole('tab', { name: 'Entities' }).click();
  await page.fill('#entity-filter', 'Player WHERE Level.value > 20');
  await page.press('#entity-filter', 'Enter');
  await page.locator('[data-testid="entity-list"] button').nth(3).click();
  await page.locator('[data-testid="entity-view"] .comp-card').first().waitFor();
  await page.screenshot({ path: out('entities') });

  await page.getByRole('tab', { name: 'Watch' }).click();
  await page.fill('#watch-input', 'SELECT entity, Name.value, Team.name, Level.value, Health.hp FROM Player, Health WHERE Health.hp < 150');
  await page.click('#watch-start');
  await page.locator('[data-testid="watch-table"] tbody tr').first().waitFor();
  const writer = setInterval(() => {
    server.rpc('exec', { text: 'UPDATE Health SET hp = Health.hp - 7 FROM Player, Health WHERE Health.hp > 20 AND Position.x < 0' }).catch(() => {});
  }, 400);
  await page.waitForTimeout(1500);
  await page.screenshot({ path: out('watch') });
  clearInterval(writer);

  await page.getByRole('tab', { name: 'Stats' }).click();
  await page.waitForTimeout(Number(process.env.STATS_WAIT_MS || 8000));
  await page.screenshot({ path: out('stats') });
  if (problems.length) console.error('console problems:', problems);
  console.log(`wrote ${['query', 'error', 'entities', 'watch', 'stats'].map(out).join(', ')}`);
} finally {
  await browser.close();
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
