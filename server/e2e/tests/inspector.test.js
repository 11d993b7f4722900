// The web inspector in a real browser against a real `ecsdb serve` (see ../harness.js).
// Run: `npm test` in server/e2e after `cargo build -p ecsdb-cli`.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  makeWorld, cliQuery, startServer, launchBrowser, openInspector, tableCells, cellText, WORLD_SCRIPT,
} from '../harness.js';

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/**
 * Runs `body({world, server, page, problems})` on a fresh world (`options.script`, else the
 * harness's) and server, then cleans up.
 */
async function withInspector(options, body) {
  const world = makeWorld(options.script);
  const server = await startServer(world.world, options);
  let page;
  try {
    const opened = await openInspector(browser, server.url);
    page = opened.page;
    await body({ world, server, page, problems: opened.problems });
  } finally {
    await page?.close();
    await server.stop();
    world.cleanup();
  }
}

async function runQuery(page, text) {
  await page.getByRole('tab', { name: 'Query' }).click();
  await page.fill('[data-testid="query-input"]', text);
  await page.click('[data-testid="run-query"]');
}

test('the page loads with no console errors and shows the schema and status', async () => {
  await withInspector({}, async ({ page, problems }) => {
    const schema = page.locator('[data-testid="schema"]');
    for (const name of ['Name', 'Health', 'Position', 'Team', 'Level', 'Player', 'Frozen']) {
      await schema.locator('.comp-name', { hasText: new RegExp(`^${name}$`) }).waitFor();
    }
    await page.locator('#conn-mode', { hasText: 'read-only' }).waitFor();
    await schema.locator('#schema-indexes', { hasText: 'Health_hp_btree' }).waitFor();
    // Every view once, so their first drawing is checked for errors too.
    for (const tab of ['Entities', 'Watch', 'Stats', 'Query']) {
      await page.getByRole('tab', { name: tab }).click();
      if (tab === 'Stats') await page.locator('[data-testid="stats-chart"] svg').waitFor();
    }
    await page.waitForTimeout(1500); // a stats and a schema poll
    assert.deepEqual(problems, []);
  });
});

test('a query shows the same rows as `ecsdb query`', async () => {
  await withInspector({}, async ({ world, page, problems }) => {
    const text = 'SELECT entity, Name.value, Health.hp, Team.name, Level.value FROM Health, ?Team, ?Level ORDER BY Name.value';
    // The CLI reads a copy: the served file belongs to the server.
    const copy = path.join(world.dir, 'copy.ecsdb');
    fs.copyFileSync(world.world, copy);
    const expected = cliQuery(copy, text);
    await runQuery(page, text);
    await page.locator('[data-testid="result-table"] tbody tr').first().waitFor();
    const headers = await page.locator('[data-testid="result-table"] thead th').allTextContents();
    assert.deepEqual(headers, expected.columns);
    assert.deepEqual(await tableCells(page, 'result-table'), expected.rows.map((row) => row.map(cellText)));
    assert.equal(expected.rows.length, 4);
    // The plan tree of the same statement, and the statement in the history.
    await page.click('#explain-query');
    await page.locator('#explain-view .plan-tree .op', { hasText: 'PROJECT' }).waitFor();
    assert.match(await page.locator('#explain-view').textContent(), /SCAN|INDEX/);
    assert.equal(await page.locator('#history-list button').first().textContent(), text);
    assert.deepEqual(problems, []);
  });
});

test('a misspelled component shows the error with its caret and "did you mean"', async () => {
  await withInspector({}, async ({ page }) => {
    await page.getByRole('tab', { name: 'Query' }).click();
    await page.fill('[data-testid="query-input"]', 'SELECT Name.value WHERE Helth.hp < 10');
    await page.press('[data-testid="query-input"]', 'Control+Enter');
    const error = page.locator('[data-testid="error"]');
    await error.waitFor();
    const text = await error.textContent();
    assert.match(text, /did you mean/i);
    assert.match(text, /Health/);
    assert.match(text, /unknown_component/);
    // The source line with a caret under column 25, where "Helth" starts.
    const pre = await error.locator('pre').textContent();
    const [line, caret] = pre.split('\n');
    assert.equal(line, 'SELECT Name.value WHERE Helth.hp < 10');
    assert.equal(caret.indexOf('^'), 24);
    assert.equal(await page.locator('[data-testid="result-table"] tbody tr').count(), 0);
  });
});

test('the editor completes and highlights names, keywords and functions from the schema', async () => {
  await withInspector({}, async ({ server, page }) => {
    const input = page.locator('[data-testid="query-input"]');
    await input.fill('');
    await input.pressSequentially('SELECT Hea');
    await page.locator('#completions li', { hasText: 'Health' }).waitFor();
    await input.press('Tab');
    assert.equal(await input.inputValue(), 'SELECT Health');
    await input.pressSequentially('.');
    const fields = page.locator('#completions li');
    await fields.first().waitFor();
    assert.deepEqual((await fields.locator('span:first-child').allTextContents()), ['hp', 'max']);
    await input.press('ArrowDown');
    await input.press('Enter');
    assert.equal(await input.inputValue(), 'SELECT Health.max');
    await input.press('Control+Enter');
    await page.locator('[data-testid="result-table"] tbody tr').nth(3).waitFor();
    assert.equal(await page.locator('[data-testid="result-table"] tbody tr').count(), 4);

    // Keywords and functions are the server's (the schema answer's), with each function's kind.
    const schema = await server.rpc('schema');
    await input.fill('SELECT abs(Health.hp) FROM Health WHERE Health.hp > 1 -- note');
    assert.deepEqual(await page.locator('#editor-hl .t-kw').allTextContents(), ['SELECT', 'FROM', 'WHERE']);
    assert.deepEqual(await page.locator('#editor-hl .t-fn').allTextContents(), ['abs']);
    assert.deepEqual(await page.locator('#editor-hl .t-comment').allTextContents(), ['-- note']);
    await input.fill('');
    await input.pressSequentially('SELECT des');
    const offered = page.locator('#completions li');
    await offered.first().waitFor();
    const items = await offered.evaluateAll((lis) => lis.map((li) => [...li.querySelectorAll('span')].map((s) => s.textContent)));
    const expected = [
      ...schema.keywords.filter((k) => k.word.startsWith('DES')).map((k) => [k.word, 'keyword']),
      ...schema.functions.filter((f) => f.name.startsWith('des')).map((f) => [f.name, f.kind]),
    ];
    assert.deepEqual(items, expected);
    assert.ok(items.some(([text, kind]) => text === 'descendant_of' && kind === 'hierarchy'), JSON.stringify(items));
  });
});

test('the entity list pages and the entity view shows every component', async () => {
  await withInspector({}, async ({ page, problems }) => {
    await page.getByRole('tab', { name: 'Entities' }).click();
    const list = page.locator('[data-testid="entity-list"]');
    await list.locator('button').first().waitFor();
    assert.equal(await list.locator('button').count(), 5);
    // Filtered by a WHERE clause.
    await page.fill('#entity-filter', 'Health WHERE Health.hp > 20');
    await page.press('#entity-filter', 'Enter');
    await list.locator('button', { hasText: 'cleo' }).waitFor();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="entity-list"] button').length === 2);
    await list.locator('button', { hasText: 'bob' }).click();
    const view = page.locator('[data-testid="entity-view"]');
    await view.locator('.comp-card').first().waitFor();
    const cards = await view.locator('.comp-card .comp-name').allTextContents();
    assert.deepEqual(cards, ['Health', 'Name', 'Position', 'Team']);
    assert.match(await view.locator('[aria-label="Health"]').textContent(), /hp\s*f32\s*50\.5/);
    // Read-only: no edit, no despawn.
    assert.equal(await view.getByRole('button', { name: 'Despawn…' }).count(), 0);
    assert.ok(await view.locator('.value-btn').first().isDisabled());
    assert.deepEqual(problems, []);
  });
});

test('the entity view follows another client\'s exec, and stops polling while hidden or gone', async () => {
  await withInspector({ allowWrites: true }, async ({ server, page, problems }) => {
    await page.getByRole('tab', { name: 'Entities' }).click();
    await page.locator('[data-testid="entity-list"] button', { hasText: 'bob' }).click();
    const view = page.locator('[data-testid="entity-view"]');
    const hp = view.locator('.value-btn[data-key="Health.hp"]');
    await hp.filter({ hasText: '50.5' }).waitFor();
    await server.rpc('exec', { text: "UPDATE Health SET hp = 12.5 WHERE Name.value = 'bob'" });
    await server.rpc('exec', { text: "ADD Frozen WHERE Name.value = 'bob'" });
    await hp.filter({ hasText: '12.5' }).waitFor({ timeout: 5000 });
    await view.locator('.comp-card .comp-name', { hasText: 'Frozen' }).waitFor();

    // Counts the page's `entity` calls from now on.
    const entityCalls = () => page.evaluate(() => window.entityCalls);
    await page.evaluate(() => {
      const conn = window.inspector.conn;
      const call = conn.call.bind(conn);
      window.entityCalls = 0;
      conn.call = (method, params) => {
        if (method === 'entity') window.entityCalls += 1;
        return call(method, params);
      };
    });
    // Another tab: no polling. Back: the view catches up at once.
    await page.getByRole('tab', { name: 'Query' }).click();
    await page.evaluate(() => (window.entityCalls = 0));
    await page.waitForTimeout(2200);
    assert.equal(await entityCalls(), 0);
    await server.rpc('exec', { text: "UPDATE Health SET hp = 33 WHERE Name.value = 'bob'" });
    await page.getByRole('tab', { name: 'Entities' }).click();
    await hp.filter({ hasText: /^33$/ }).waitFor({ timeout: 2000 });

    // The whole page hidden (another browser tab in front, a minimised window): neither the
    // entity view nor the schema is polled (stats still are: the charts keep their minute).
    // Shown again: the view catches up.
    await page.evaluate(() => {
      const conn = window.inspector.conn;
      const call = conn.call;
      window.schemaCalls = 0;
      conn.call = (method, params) => {
        if (method === 'schema') window.schemaCalls += 1;
        return call(method, params);
      };
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      document.dispatchEvent(new Event('visibilitychange'));
      window.entityCalls = 0;
    });
    await page.waitForTimeout(2500);
    assert.equal(await entityCalls(), 0);
    assert.equal(await page.evaluate(() => window.schemaCalls), 0);
    await server.rpc('exec', { text: "UPDATE Health SET hp = 44 WHERE Name.value = 'bob'" });
    await page.evaluate(() => {
      // Back to the browser's own answers.
      delete document.hidden;
      delete document.visibilityState;
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await hp.filter({ hasText: /^44$/ }).waitFor({ timeout: 3000 });
    assert.ok((await entityCalls()) > 0);

    // Despawned by another client: the view says so and stops asking.
    await server.rpc('exec', { text: "DESPAWN WHERE Name.value = 'bob'" });
    await view.getByText('no longer exists').waitFor({ timeout: 5000 });
    await page.evaluate(() => (window.entityCalls = 0));
    await page.waitForTimeout(2200);
    assert.equal(await entityCalls(), 0);
    assert.deepEqual(problems, []);
  });
});

test('with writes allowed, an edit in the entity view changes the world', async () => {
  await withInspector({ allowWrites: true }, async ({ server, page, problems }) => {
    await page.locator('#conn-mode', { hasText: 'writable' }).waitFor();
    await page.getByRole('tab', { name: 'Entities' }).click();
    await page.locator('[data-testid="entity-list"] button', { hasText: 'ann' }).click();
    const view = page.locator('[data-testid="entity-view"]');
    const id = (await view.locator('h2').textContent()).trim();
    await view.locator('.value-btn[data-key="Health.hp"]').click();
    await view.locator('input.edit').fill('77.5');
    await view.locator('input.edit').press('Enter');
    await view.locator('.value-btn[data-key="Health.hp"]', { hasText: '77.5' }).waitFor();
    const after = await server.rpc('query', { text: `SELECT Health.hp WHERE entity = ${id}` });
    assert.deepEqual(after.rows, [[77.5]]);

    // Add a tag, remove a component, then despawn after confirming.
    await view.locator('#add-component').selectOption('Frozen');
    await view.getByRole('button', { name: 'Add', exact: true }).click();
    await view.locator('.comp-card .comp-name', { hasText: 'Frozen' }).waitFor();
    await view.getByRole('button', { name: 'Remove Team' }).click();
    await page.waitForFunction(() => !document.querySelector('[data-testid="entity-view"] [aria-label="Team"]'));
    const comps = await server.rpc('entity', { id });
    assert.deepEqual(Object.keys(comps.components).sort(), ['Frozen', 'Health', 'Level', 'Name', 'Player']);

    await view.getByRole('button', { name: 'Despawn…' }).click();
    await page.locator('#confirm-dialog').getByRole('button', { name: 'Despawn' }).click();
    await view.getByText('no longer exists').waitFor();
    await assert.rejects(server.rpc('entity', { id }), (e) => e.data?.kind === 'stale_entity');
    assert.deepEqual(problems, []);
  });
});

test('a watch updates after an exec from another client', async () => {
  await withInspector({ allowWrites: true }, async ({ server, page, problems }) => {
    await page.getByRole('tab', { name: 'Watch' }).click();
    await page.fill('#watch-input', 'SELECT entity, Name.value, Health.hp FROM Health');
    await page.click('#watch-start');
    const table = page.locator('[data-testid="watch-table"]');
    await table.locator('tbody tr').nth(3).waitFor();
    assert.equal(await table.locator('tbody tr').count(), 4);

    await server.rpc('exec', { text: "UPDATE Health SET hp = 5 WHERE Name.value = 'ann'" });
    await table.locator('tbody tr', { hasText: 'ann' }).locator('td', { hasText: /^5$/ }).waitFor();
    await server.rpc('exec', { text: "SPAWN Name {value: 'fay'}, Health {hp: 42, max: 50}" });
    await table.locator('tbody tr', { hasText: 'fay' }).waitFor();
    await server.rpc('exec', { text: "DESPAWN WHERE Name.value = 'bob'" });
    await page.waitForFunction(() => !document.querySelector('[data-testid="watch-table"] tbody').textContent.includes('bob'));
    const cells = await tableCells(page, 'watch-table');
    assert.deepEqual(cells.map((r) => r[1]).sort(), ['ann', 'cleo', 'eve', 'fay']);
    assert.deepEqual(problems, []);
  });
});

test('a write on a read-only server says how to allow writes', async () => {
  await withInspector({}, async ({ page }) => {
    await runQuery(page, "UPDATE Health SET hp = 1 WHERE Name.value = 'ann'");
    const error = page.locator('[data-testid="error"]');
    await error.waitFor();
    assert.match(await error.textContent(), /--allow-writes/);
  });
});

test('the page reconnects by itself and its watch goes on', async () => {
  await withInspector({ allowWrites: true }, async ({ server, page }) => {
    // Keyboard: the tabs take the arrow keys.
    await page.focus('#tab-query');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.locator('#panel-watch').isVisible(), true);
    await page.fill('#watch-input', 'SELECT entity, Name.value, Level.value FROM Level');
    await page.press('#watch-input', 'Enter');
    const table = page.locator('[data-testid="watch-table"]');
    await table.locator('tbody tr').nth(1).waitFor();

    const states = await page.evaluate(() => new Promise((resolve) => {
      const seen = [];
      const conn = window.inspector.conn;
      conn.addEventListener('state', (e) => {
        seen.push(e.detail.state);
        if (e.detail.state === 'connected') resolve(seen);
      });
      conn.drop(); // the worker closes its socket as a dropped connection would
    }));
    assert.deepEqual(states, ['reconnecting', 'connected']);
    assert.equal(await page.locator('#conn-text').textContent(), 'connected');

    await server.rpc('exec', { text: "UPDATE Level SET value = 99 WHERE Name.value = 'cleo'" });
    await table.locator('tbody tr', { hasText: 'cleo' }).locator('td', { hasText: /^99$/ }).waitFor();
  });
});

test('without a token in the URL the page asks for it, and a wrong one is refused', async () => {
  const world = makeWorld();
  const server = await startServer(world.world);
  const page = await browser.newPage();
  try {
    await page.goto(`${server.origin}/`);
    await page.locator('#token-banner').waitFor();
    await page.fill('#token-input', 'wrong');
    await page.press('#token-input', 'Enter');
    await page.locator('#conn[data-state="unauthorized"]').waitFor();
    await page.fill('#token-input', server.token);
    await page.press('#token-input', 'Enter');
    await page.locator('#conn[data-state="connected"]').waitFor({ timeout: 5000 });
    await page.locator('[data-testid="schema"] .comp-name', { hasText: 'Health' }).first().waitFor();
  } finally {
    await page.close();
    await server.stop();
    world.cleanup();
  }
});

test('integers beyond 2^53 show exactly, and an edit writes exactly what was typed', async () => {
  const script = `CREATE COMPONENT Name (value string);
CREATE COMPONENT Big (n u64, s i64);
SPAWN Name {value: 'huge'}, Big {n: 9007199254740995, s: -9007199254740995};`;
  await withInspector({ allowWrites: true, script }, async ({ server, page, problems }) => {
    await page.locator('#conn-mode', { hasText: 'writable' }).waitFor();
    // Read: the query view and the entity view show every digit.
    await runQuery(page, 'SELECT entity, Big.n, Big.s FROM Big');
    await page.locator('[data-testid="result-table"] tbody tr').first().waitFor();
    assert.deepEqual(await tableCells(page, 'result-table'), [['0v0', '9007199254740995', '-9007199254740995']]);
    await page.getByRole('tab', { name: 'Entities' }).click();
    await page.locator('[data-testid="entity-list"] button', { hasText: 'huge' }).click();
    const view = page.locator('[data-testid="entity-view"]');
    const n = view.locator('.value-btn[data-key="Big.n"]');
    const s = view.locator('.value-btn[data-key="Big.s"]');
    await n.filter({ hasText: /^9007199254740995$/ }).waitFor();

    // Write: the u64 and the i64, each to a value a double cannot hold.
    const edit = async (button, text) => {
      await button.click();
      await view.locator('input.edit').fill(text);
      await view.locator('input.edit').press('Enter');
    };
    await edit(n, '9007199254740993');
    await n.filter({ hasText: /^9007199254740993$/ }).waitFor();
    await edit(s, '-9007199254740993');
    await s.filter({ hasText: /^-9007199254740993$/ }).waitFor();
    const after = await server.rpc('query', { text: 'SELECT Big.n, Big.s FROM Big' });
    assert.deepEqual(after.rows, [[9007199254740993n, -9007199254740993n]]);

    // A value the field cannot take is refused in the page, and nothing is written.
    await edit(n, '18446744073709551615');
    await page.locator('#toast', { hasText: 'out of range for u64' }).waitFor();
    await edit(n, '1.5');
    await page.locator('#toast', { hasText: "'1.5' is not an integer" }).waitFor();
    await n.filter({ hasText: /^9007199254740993$/ }).waitFor();
    assert.deepEqual((await server.rpc('query', { text: 'SELECT Big.n FROM Big' })).rows, [[9007199254740993n]]);

    await runQuery(page, 'SELECT Big.n, Big.s FROM Big');
    await page.locator('[data-testid="result-table"] tbody tr', { hasText: '9007199254740993' }).waitFor();
    assert.deepEqual(await tableCells(page, 'result-table'), [['9007199254740993', '-9007199254740993']]);
    assert.deepEqual(problems, []);
  });
});

test('the entity list pages in entity order while entities move between tables', async () => {
  // 120 entities in two tables, interleaved: even ids without Mark, odd ids with it.
  const spawns = Array.from({ length: 120 }, (_, i) => `SPAWN Name {value: 'n${i}'}${i % 2 ? ', Mark' : ''};`);
  const script = `CREATE COMPONENT Name (value string);\nCREATE COMPONENT Mark;\n${spawns.join('\n')}\n`;
  await withInspector({ allowWrites: true, script }, async ({ server, page, problems }) => {
    await page.getByRole('tab', { name: 'Entities' }).click();
    const list = page.locator('[data-testid="entity-list"] button');
    const shown = () => list.evaluateAll((buttons) => buttons.map((b) => b.dataset.id));
    const index = (id) => Number(id.split('v')[0]);
    const pages = [];
    await page.locator('#entity-range', { hasText: /^1–50 of 120$/ }).waitFor();
    pages.push(await shown());
    // Between page loads another client moves entities between tables, which reorders a scan.
    await server.rpc('exec', { text: 'ADD Mark WHERE NOT has(Mark)' });
    await page.click('#entity-next');
    await page.locator('#entity-range', { hasText: /^51–100/ }).waitFor();
    pages.push(await shown());
    await server.rpc('exec', { text: 'REMOVE Mark WHERE entity < 60v0' });
    await page.click('#entity-next');
    await page.locator('#entity-range', { hasText: /^101–120/ }).waitFor();
    pages.push(await shown());
    assert.equal(await page.locator('#entity-next').isDisabled(), true);

    assert.deepEqual(pages.map((p) => p.length), [50, 50, 20]);
    for (const p of pages) assert.deepEqual(p, [...p].sort((a, b) => index(a) - index(b)), 'each page in entity order');
    const all = (await server.rpc('query', { text: 'SELECT entity ORDER BY entity' })).rows.map((r) => r[0]);
    assert.equal(all.length, 120);
    assert.deepEqual(pages.flat(), all, 'every entity once, none repeated or missing');

    // Back: the page that starts after the first page's last id, as it is now.
    await page.click('#entity-prev');
    await page.locator('#entity-range', { hasText: /^51–100/ }).waitFor();
    assert.deepEqual(await shown(), pages[1]);
    await page.click('#entity-prev');
    await page.locator('#entity-range', { hasText: /^1–50/ }).waitFor();
    assert.deepEqual(await shown(), pages[0]);
    assert.equal(await page.locator('#entity-prev').isDisabled(), true);
    assert.deepEqual(problems, []);
  });
});

test('an acyclic relation shows as a tree', async () => {
  await withInspector({ allowWrites: true }, async ({ server, page, problems }) => {
    await server.rpc('exec', { text: 'CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE CASCADE ACYCLIC)' });
    const schema = await server.rpc('schema');
    const childOf = schema.components.find((c) => c.name === 'ChildOf');
    assert.deepEqual(childOf.fields, [{ name: 'parent', type: 'entity', references: { on_delete: 'CASCADE', acyclic: true } }]);
    const spawn = async (name, parent) => {
      const text = parent ? `SPAWN Name {value: '${name}'}, ChildOf {parent: $p}` : `SPAWN Name {value: '${name}'}`;
      const out = await server.rpc('exec', { text, params: parent ? { p: { entity: parent } } : {} });
      return out.results[0].rows[0][0];
    };
    const root = await spawn('castle');
    const hall = await spawn('hall', root);
    await spawn('tower', root);
    await spawn('throne', hall);

    await page.reload();
    await page.locator('#conn[data-state="connected"]').waitFor();
    await page.getByRole('tab', { name: 'Entities' }).click();
    await page.locator('#mode-tree', { hasText: 'ChildOf.parent' }).click();
    const tree = page.locator('#entity-tree');
    const castle = tree.locator('li', { hasText: 'castle' }).first();
    await castle.waitFor();
    await castle.getByRole('button', { name: `Expand ${root}` }).click();
    await tree.locator('button.node-label', { hasText: 'hall' }).waitFor();
    await tree.locator('button.node-label', { hasText: 'tower' }).waitFor();
    await tree.getByRole('button', { name: `Expand ${hall}` }).click();
    await tree.locator('button.node-label', { hasText: 'throne' }).click();
    await page.locator('[data-testid="entity-view"] [aria-label="ChildOf"]', { hasText: hall }).waitFor();
    assert.deepEqual(problems, []);
  });
});

test('the schema lists the running systems, the stats chart their time, and the status says writable', async () => {
  const world = makeWorld(`${WORLD_SCRIPT}\nCREATE SYSTEM heal IN PHASE OnUpdate AS UPDATE Health SET hp = Health.hp + 1;`);
  const server = await startServer(world.world, { allowWrites: true, extra: ['--hz', '30'] });
  let page;
  try {
    const opened = await openInspector(browser, server.url);
    page = opened.page;
    await page.locator('#conn-mode', { hasText: 'writable' }).waitFor();
    const systems = page.locator('#schema-systems');
    await systems.locator('li', { hasText: 'heal' }).waitFor();
    await systems.locator('li', { hasText: 'OnUpdate #1 · writes Health' }).waitFor();
    // A time once the writer has ticked with the inspector attached (the schema polls stats).
    await page.waitForFunction(() => {
      const li = [...document.querySelectorAll('#schema-systems li')].find((l) => l.textContent.includes('heal'));
      return li && !li.querySelector('.num')?.textContent.includes('–');
    }, null, { timeout: 15000 });
    await page.getByRole('tab', { name: 'Stats' }).click();
    await page.locator('#system-legend', { hasText: 'heal' }).waitFor();
    assert.deepEqual(opened.problems, []);
  } finally {
    await page?.close();
    await server.stop();
    world.cleanup();
  }
});
