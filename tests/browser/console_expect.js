// console_expect.js — the console's OSD page while a new cluster's PGs
// wait for their OSDs (iolake-meta --expect-osds), in headless Chromium
// (Debian's, through playwright-core), for
// tests/integration/test_expect_osds.py: log in, open the OSD page, wait
// for the notice, screenshot it, then act through the notice's form
// (PUT /api/v1/osds/expect, each through its confirm) and screenshot
// again; print what it saw as one JSON line; the test decides pass or
// fail.
//
// Usage: node console_expect.js CONFIG_JSON
//   {"url": "http://127.0.0.1:P/console/", "ak": ..., "sk": ..., "shots": DIR,
//    "name": "osds-waiting", "timeout_ms": 30000,
//    "action": "set" (with "count": N: the field and Set) | "now" (Place now) | absent}
'use strict';
const { chromium } = require('playwright-core');

const cfg = JSON.parse(process.argv[2]);
const T = cfg.timeout_ms || 30000;

async function main() {
	const args = ['--disable-gpu', '--disable-dev-shm-usage'];
	if (process.getuid && process.getuid() === 0)
		args.push('--no-sandbox');
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args, timeout: T,
	});
	const out = { console: [] };
	try {
		const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
		page.setDefaultTimeout(T);
		page.on('pageerror', (e) => out.console.push('pageerror: ' + e.message));
		await page.goto(cfg.url);
		await page.waitForSelector('form.login');
		await page.fill('input[name=access_key]', cfg.ak);
		await page.fill('input[name=secret_key]', cfg.sk);
		await page.click('form.login button[type=submit]');
		await page.click('a[data-nav="osds"]');
		const notice = await page.waitForSelector('[data-test="osd-expect"]');
		await page.waitForSelector('[data-test="osd-table"] tbody tr');
		const text = async (sel) => (await (await page.waitForSelector(sel)).textContent())
			.replace(/\s+/g, ' ').trim();
		out.notice = (await notice.textContent()).replace(/\s+/g, ' ').trim();
		out.rows = await page.$$eval('[data-test="osd-table"] tbody tr', (els) => els.length);
		const name = cfg.name || 'osds-waiting';
		out.shot = cfg.shots + '/' + name + '.png';
		await page.screenshot({ path: out.shot, fullPage: true });
		if (cfg.action) {
			if (cfg.action === 'set') {
				await page.fill('[data-test="expect-count"]', String(cfg.count));
				await page.click('[data-test="expect-set"]');
			} else {
				await page.click('[data-test="expect-now"]');
			}
			await page.waitForSelector('.modal');
			out.confirm = await text('.modal');
			await page.click('[data-test="confirm"]');
			out.done = await text('[data-test="osd-done"]');
			if (cfg.action === 'set') {
				// the page polls GET osds: wait for the notice to say the new count
				await page.waitForFunction((n) => {
					const e = document.querySelector('[data-test="osd-expect"]');
					return e && e.textContent.includes('waits for ' + n + ' OSDs');
				}, cfg.count);
				out.after = await text('[data-test="osd-expect"]');
			} else {
				await page.waitForFunction(() => !document.querySelector('[data-test="osd-expect"]'));
				out.after = null;   // no notice: placed
			}
			out.shot_after = cfg.shots + '/' + name + '-after.png';
			await page.screenshot({ path: out.shot_after, fullPage: true });
		}
	} finally {
		await browser.close();
	}
	console.log(JSON.stringify(out));
}

main().catch((e) => {
	console.error(e && e.stack ? e.stack : String(e));
	process.exit(1);
});
