// console_expect.js — the console's OSD page while a new cluster's PGs
// wait for their OSDs (iolake-meta --expect-osds), in headless Chromium
// (Debian's, through playwright-core), for
// tests/integration/test_expect_osds.py: log in, open the OSD page, wait
// for the notice, screenshot it, and print what it saw as one JSON line;
// the test decides pass or fail.
//
// Usage: node console_expect.js CONFIG_JSON
//   {"url": "http://127.0.0.1:P/console/", "ak": ..., "sk": ..., "shots": DIR,
//    "timeout_ms": 30000}
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
		out.notice = (await notice.textContent()).replace(/\s+/g, ' ').trim();
		out.rows = await page.$$eval('[data-test="osd-table"] tbody tr', (els) => els.length);
		out.shot = cfg.shots + '/osds-waiting.png';
		await page.screenshot({ path: out.shot, fullPage: true });
	} finally {
		await browser.close();
	}
	console.log(JSON.stringify(out));
}

main().catch((e) => {
	console.error(e && e.stack ? e.stack : String(e));
	process.exit(1);
});
