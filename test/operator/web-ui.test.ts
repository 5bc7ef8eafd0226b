/**
 * Temporal Web UI, in a real headless Chromium: a finished run's page shows its table, phase and
 * outcome. The screenshot goes to test-results/web-ui.png (docs/web-ui.png, in the README, is one).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startExtraction, waitForManifest } from '../../src/client';
import { projectRoot } from '../../devenv/project-root';
import { commitUpdate } from '../../src/contract/definitions';
import { seedMixedTable } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import { eventually } from '../support/eventually';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
];

describe('Temporal Web UI (live, headless Chromium)', function () {
  this.timeout(120_000);

  it("a finished run's page shows its table, phase and outcome", async () => {
    assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
    const webUi = live().webUi;
    assert.ok(webUi, 'the dev server runs without its UI when TEMPORAL_ADDRESS is set; unset it for this test');
    const table = await seedMixedTable('webui', 2_000);
    // The worker stays up while the page is read: current details are answered by a worker.
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 2 }, { taskQueue });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
      try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        await page.goto(`${webUi}/namespaces/default/workflows/${encodeURIComponent(handle.workflowId)}`, { waitUntil: 'networkidle' });
        await page.getByText(table).first().waitFor({ timeout: 30_000 });
        // Search attributes: typed table, phase, outcome and rows.
        await page.getByText('Search Attributes', { exact: true }).first().click();
        await page.getByText('PgExtractOutcome').first().waitFor({ timeout: 30_000 });
        const attributes = await page.locator('main').innerText();
        for (const expected of ['PgExtractTable', table, 'PgExtractPhase', 'done', 'PgExtractOutcome', 'success', 'PgExtractRows', '2000']) {
          assert.ok(attributes.includes(expected), `the Search Attributes tab shows ${expected}`);
        }
        // User metadata: the summary and the current-details table (Markdown, rendered in frames).
        await page.getByText('User Metadata', { exact: true }).first().click();
        const framesText = async (): Promise<string> =>
          (
            await Promise.all(
              page.frames().map((f) =>
                f
                  .locator('body')
                  .innerText()
                  .catch(() => ''),
              ),
            )
          ).join('\n');
        let text = '';
        const shown = async (): Promise<boolean> => {
          text = await framesText();
          return text.includes(`Extract ${table}`) && /success/.test(text);
        };
        await eventually(shown, () => `user metadata showed the summary and details:\n${text}`, { intervalMs: 250 });
        assert.match(text, /phase\s+done/, 'current details show the phase');
        assert.match(text, /partitions\s+2[/\u2044]2\s/, `current details show partitions done/total:\n${text}`);
        assert.match(text, /rows\s+2,000\s/, `current details show rows, grouped:\n${text}`);
        assert.match(text, /bytes\s+\d+\.\d (kB|MB)\s/, `current details show bytes in human units:\n${text}`);
        assert.doesNotMatch(text, /partitionsrows/, 'headers do not run together');
        const results = join(projectRoot(), 'test-results');
        mkdirSync(results, { recursive: true });
        await page.screenshot({ path: join(results, 'web-ui.png') });
      } finally {
        await browser.close();
      }
    });
  });
});
