// drive.js — open one page in headless Chromium (Debian's, through
// playwright-core), wait until its script has written a line starting
// "RESULT:" into #result, save a screenshot, print {"text": ...} as JSON.
//
// Usage: node drive.js URL SCREENSHOT.png [TIMEOUT_MS]
// CHROMIUM (default /usr/bin/chromium) names the browser; as root it runs
// with --no-sandbox (Chromium refuses its sandbox to root).
'use strict';
const { chromium } = require('playwright-core');

async function main() {
	const [url, shot, tmo] = process.argv.slice(2);
	const timeout = Number(tmo || 60000);
	const args = ['--disable-gpu', '--disable-dev-shm-usage'];
	if (process.getuid && process.getuid() === 0)
		args.push('--no-sandbox');
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true, args, timeout,
	});
	const console_lines = [];
	try {
		const page = await browser.newPage({ viewport: { width: 900, height: 500 } });
		page.on('console', (m) => console_lines.push(m.type() + ': ' + m.text()));
		page.on('pageerror', (e) => console_lines.push('pageerror: ' + e.message));
		await page.goto(url, { timeout });
		await page.waitForFunction(() => {
			const r = document.getElementById('result');
			return r && r.textContent.startsWith('RESULT:');
		}, null, { timeout });
		const text = await page.textContent('#result');
		await page.screenshot({ path: shot, fullPage: true });
		process.stdout.write(JSON.stringify({ text, console: console_lines }) + '\n');
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	process.stderr.write('drive.js: ' + (e && e.stack || e) + '\n');
	process.exit(2);
});
