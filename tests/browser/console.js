// console.js — drive IOLake's web console in headless Chromium (Debian's,
// through playwright-core) for tests/integration/test_console.py, and
// print what it saw as one JSON line; the test decides pass or fail.
//
// Usage: node console.js CONFIG_JSON
//   {"url": "http://127.0.0.1:P/console/", "ak": ..., "sk": ..., "shots": DIR,
//    "osd": 3, "user": "web-alice", "doomed": "web-bob", "bucket": "...",
//    "timeout_ms": 30000}
// Steps: a wrong secret (the error shown), log in, the overview, 6 OSDs on
// the OSD page, create two users (the secret shown once) and delete the
// second, the PG grid all clean, mark OSD `osd` out (confirm) and wait for
// its PGs to leave active+clean in the grid, mark it in and wait for the
// grid to be clean again, the traffic charts, the buckets, and a session
// made invalid sends the page back to login, where a non-admin user's key
// is refused. A screenshot of each page
// goes to DIR. Every request the page makes is recorded (the test checks
// none went to the S3 port).
'use strict';
const { chromium } = require('playwright-core');

const cfg = JSON.parse(process.argv[2]);
const T = cfg.timeout_ms || 30000;
const out = { steps: [], requests: [], console: [], shots: [] };
const t0 = Date.now();

function step(name, value) {
	out.steps.push({ name, value, ms: Date.now() - t0 });
}

async function shot(page, name) {
	const path = cfg.shots + '/' + name + '.png';
	await page.screenshot({ path, fullPage: true });
	out.shots.push(path);
}

async function nav(page, id, ready) {
	await page.click('a[data-nav="' + id + '"]');
	await page.waitForSelector(ready, { timeout: T });
}

// The grid's squares: [{pg, state, osds}] as the page shows them.
async function grid(page) {
	return page.$$eval('[data-test="pg-grid"] .pg', (els) => els.map((e) => ({
		pg: Number(e.dataset.pg), state: e.dataset.state,
		osds: e.dataset.osds.split(',').map(Number),
	})));
}

async function main() {
	const args = ['--disable-gpu', '--disable-dev-shm-usage'];
	if (process.getuid && process.getuid() === 0)
		args.push('--no-sandbox');
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args, timeout: T,
	});
	let page;
	try {
		page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
		page.setDefaultTimeout(T);
		page.on('console', (m) => out.console.push(m.type() + ': ' + m.text()));
		page.on('pageerror', (e) => out.console.push('pageerror: ' + e.message));
		page.on('request', (r) => out.requests.push(r.method() + ' ' + r.url()));

		// Login: a wrong secret first.
		await page.goto(cfg.url);
		await page.waitForSelector('form.login');
		await shot(page, '01-login');
		await page.fill('input[name=access_key]', cfg.ak);
		await page.fill('input[name=secret_key]', cfg.sk + 'x');
		await page.click('form.login button[type=submit]');
		const bad = await page.waitForSelector('[data-test="login-error"]');
		step('bad password', await bad.textContent());
		await shot(page, '02-login-bad-password');
		await page.fill('input[name=secret_key]', cfg.sk);
		await page.click('form.login button[type=submit]');
		await page.waitForSelector('.stat-value .badge');
		await page.waitForFunction(() => document.querySelectorAll('.stat').length >= 5 &&
			!/—/.test(document.querySelectorAll('.stat-value')[2].textContent));
		step('overview', await page.$$eval('.stat', (els) => els.map((e) => e.textContent)));
		step('members', await page.$$eval('.card table tbody tr', (els) => els.map((e) => e.textContent)));
		await shot(page, '03-overview');

		// OSDs: six, up and in.
		await nav(page, 'osds', '[data-test="osd-table"] tbody tr');
		await page.waitForFunction(() => document.querySelectorAll('[data-test="osd-table"] tbody tr').length >= 6);
		const osds = await page.$$eval('[data-test="osd-table"] tbody tr',
			(els) => els.map((e) => ({ id: Number(e.dataset.osd), state: e.dataset.state,
				pgs: Number(e.querySelectorAll('td')[5].textContent.replace(/,/g, '')) })));
		step('osds', osds);
		await shot(page, '04-osds');

		// Users: create one (its secret shown once), create and delete another.
		await nav(page, 'users', '[data-test="user-table"]');
		const created = {};
		for (const name of [cfg.user, cfg.doomed]) {
			await page.fill('[data-test="new-user"] input[name=name]', name);
			await page.click('[data-test="new-user"] button[type=submit]');
			await page.waitForSelector('[data-test="new-secret"]');
			created[name] = {
				access_key: await page.textContent('[data-test="new-access-key"]'),
				secret_key: await page.textContent('[data-test="new-secret-key"]'),
			};
			if (name === cfg.user)
				await shot(page, '05-users-new-secret');
			await page.click('[data-test="new-secret"] button');
			await page.waitForSelector('[data-user="' + name + '"]');
		}
		const html = await page.content();
		step('secret gone after Done', !html.includes(created[cfg.user].secret_key));
		await page.click('[data-test="delete-' + cfg.doomed + '"]');
		await page.waitForSelector('.modal');
		await shot(page, '06-users-confirm-delete');
		await page.click('.modal [data-test="confirm"]');
		await page.waitForSelector('[data-user="' + cfg.doomed + '"]', { state: 'detached' });
		step('users', await page.$$eval('[data-test="user-table"] tbody tr', (els) => els.map((e) => e.dataset.user)));
		step('created', created);
		await shot(page, '07-users');

		// PGs: all clean; then OSD cfg.osd out.
		await nav(page, 'pgs', '[data-test="pg-grid"] .pg');
		const before = await grid(page);
		step('pgs before', { total: before.length, clean: before.filter((p) => p.state === 'active+clean').length,
			with_osd: before.filter((p) => p.osds.includes(cfg.osd)).length });
		await shot(page, '08-pgs-clean');

		await nav(page, 'osds', '[data-test="out-' + cfg.osd + '"]');
		await page.click('[data-test="out-' + cfg.osd + '"]');
		await page.waitForSelector('.modal');
		await shot(page, '09-osds-confirm-out');
		await page.click('.modal [data-test="confirm"]');
		await page.waitForSelector('[data-osd="' + cfg.osd + '"][data-state="up+out"]');
		step('osd out', await page.textContent('[data-test="osd-done"]'));
		await shot(page, '10-osds-out');

		const ids = before.filter((p) => p.osds.includes(cfg.osd)).map((p) => p.pg);
		await nav(page, 'pgs', '[data-test="pg-grid"] .pg');
		const tOut = Date.now();
		await page.waitForFunction((pgs) => pgs.every((id) => {
			const e = document.querySelector('[data-test="pg-grid"] .pg[data-pg="' + id + '"]');
			return e && e.dataset.state !== 'active+clean';
		}), ids, { timeout: T, polling: 250 });
		const after = await grid(page);
		const states = {};
		for (const p of after)
			if (ids.includes(p.pg))
				states[p.state] = (states[p.state] || 0) + 1;
		step('pgs after out', { ms: Date.now() - tOut, of_osd: ids.length, states,
			still_on_osd: after.filter((p) => p.osds.includes(cfg.osd)).length,
			legend: await page.$$eval('[data-test="pg-legend"] li', (els) => els.map((e) => e.textContent)) });
		await shot(page, '11-pgs-osd-out');

		// ... and in again: the grid clean again.
		await nav(page, 'osds', '[data-test="in-' + cfg.osd + '"]');
		await page.click('[data-test="in-' + cfg.osd + '"]');
		await page.waitForSelector('.modal');
		await page.click('.modal [data-test="confirm"]');
		await page.waitForSelector('[data-osd="' + cfg.osd + '"][data-state="up+in"]');
		await nav(page, 'pgs', '[data-test="pg-grid"] .pg');
		const tIn = Date.now();
		await page.waitForFunction(() => {
			const sq = document.querySelectorAll('[data-test="pg-grid"] .pg');
			return sq.length > 0 && [...sq].every((e) => e.dataset.state === 'active+clean');
		}, null, { timeout: T, polling: 250 });
		const back = await grid(page);
		step('pgs after in', { ms: Date.now() - tIn, clean: back.filter((p) => p.state === 'active+clean').length,
			on_osd: back.filter((p) => p.osds.includes(cfg.osd)).length });
		await shot(page, '12-pgs-clean-again');

		// Traffic: two samples make the charts; the table lists the ops.
		await nav(page, 'traffic', '[data-test="ops-table"] tbody tr');
		await page.waitForFunction(() => document.querySelectorAll('.chart canvas').length >= 2 &&
			[...document.querySelectorAll('[data-test="ops-table"] tbody td:nth-child(2)')].some((e) => e.textContent !== '—'),
			null, { timeout: T });
		await page.waitForTimeout(2500); // one more sample: a line, not a point
		step('traffic ops', await page.$$eval('[data-test="ops-table"] tbody tr',
			(els) => els.map((e) => e.querySelector('td').textContent)));
		await shot(page, '13-traffic');

		// Buckets.
		await nav(page, 'buckets', '[data-bucket="' + cfg.bucket + '"]');
		step('bucket row', await page.$$eval('[data-bucket="' + cfg.bucket + '"] td', (els) => els.map((e) => e.textContent)));
		await shot(page, '14-buckets');

		// A quota set in the page (issue 20): max 1 object on cfg.quota_bucket;
		// test_console.py then sees a PUT refused through boto3.
		await page.selectOption('[data-test="quota-buckets"] select[name="quota-target"]', cfg.quota_bucket);
		await page.fill('[data-test="quota-buckets"] input[name="max-objects"]', '1');
		await page.click('[data-test="quota-buckets"] [data-test="quota-set"]');
		step('quota set', await (await page.waitForSelector('[data-test="quota-done"]')).textContent());
		await page.waitForFunction((b) => {
			const td = document.querySelector('[data-bucket="' + b + '"] [data-test="bucket-quota"]');
			return td && td.textContent.includes('1 objects');
		}, cfg.quota_bucket);
		step('quota row', await page.$$eval('[data-bucket="' + cfg.quota_bucket + '"] td', (els) => els.map((e) => e.textContent)));
		await shot(page, '14b-buckets-quota');

		// The maintenance page: the GC and scrub panels.
		await nav(page, 'maint', '[data-test="scrub-panel"] tbody tr');
		await page.waitForSelector('[data-test="gc-panel"]');
		step('gc panel', await page.$$eval('[data-test="gc-panel"] .stat', (els) => els.map((e) => e.textContent)));
		step('scrub rows', await page.$$eval('[data-test="scrub-panel"] tbody tr', (els) => els.map((e) => e.dataset.osd)));
		await shot(page, '14c-maintenance');

		// A session the server no longer accepts: back to login, with why.
		await page.evaluate(() => sessionStorage.setItem('iolake.session',
			JSON.stringify({ token: 'v1.9999999999.61.00', user: 'root' })));
		await page.click('a[data-nav="osds"]');
		const why = await page.waitForSelector('form.login .notice');
		step('expired session', await why.textContent());
		await shot(page, '15-session-ended');

		// A user who is not an admin cannot log in (403, said so).
		await page.fill('input[name=access_key]', created[cfg.user].access_key);
		await page.fill('input[name=secret_key]', created[cfg.user].secret_key);
		await page.click('form.login button[type=submit]');
		const na = await page.waitForSelector('[data-test="login-error"]');
		step('non-admin login', await na.textContent());
	} catch (e) {
		if (page)
			await shot(page, 'failed').catch(() => {});
		throw e;
	} finally {
		await browser.close();
	}
}

main().then(() => {
	process.stdout.write(JSON.stringify(out) + '\n');
}).catch((e) => {
	process.stderr.write('console.js: ' + (e && e.stack || e) + '\n');
	process.stderr.write('steps so far: ' + JSON.stringify(out.steps) + '\n');
	process.exit(2);
});
