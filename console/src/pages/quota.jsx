// quota.jsx — the quota field of the buckets and users pages (PUT / DELETE
// buckets/{b}/quota and users/{u}/quota): pick a bucket or user, give max
// bytes and max objects (empty or 0: no limit), set or clear. Writes past a
// quota get 403 QuotaExceeded from S3 (docs/admin-api.md, "Quotas").
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorBox } from '../ui.jsx';
import { bytes, count } from '../util.js';

// "1 GiB", "500 MiB", "1000" (bytes) -> a number, or NaN.
const UNITS = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4,
	kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12 };
export function parseSize(s) {
	const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(s || '0');
	if (!m || !(m[2].toLowerCase() in UNITS)) return NaN;
	return Math.floor(Number(m[1]) * UNITS[m[2].toLowerCase()]);
}

export function quotaText(q) {
	if (!q) return '—';
	const parts = [];
	if (q.max_bytes) parts.push('≤ ' + bytes(q.max_bytes));
	if (q.max_objects) parts.push('≤ ' + count(q.max_objects) + ' objects');
	return parts.join(', ') || '—';
}

export function QuotaEditor({ kind, names, onDone }) {
	const [name, setName] = useState('');
	const [maxBytes, setMaxBytes] = useState('');
	const [maxObjects, setMaxObjects] = useState('');
	const [busy, setBusy] = useState(false);
	const [err, setErr] = useState(null);
	const [done, setDone] = useState(null);
	const target = name || names[0] || '';
	const path = kind + '/' + encodeURIComponent(target) + '/quota';
	const run = async (clear) => {
		setBusy(true);
		setErr(null);
		setDone(null);
		try {
			const b = parseSize(maxBytes), o = Number(maxObjects || 0);
			if (!clear && (Number.isNaN(b) || !Number.isInteger(o) || o < 0))
				throw new Error('give a size (e.g. 10 GiB) and a whole number of objects');
			const r = clear ? await api('DELETE', path)
				: await api('PUT', path, { max_bytes: b, max_objects: o });
			setDone((kind === 'users' ? 'user ' : 'bucket ') + target + ': ' +
				(r.quota ? 'quota ' + quotaText(r.quota) : 'no quota'));
			onDone && onDone();
		} catch (x) {
			setErr(x);
		}
		setBusy(false);
	};
	if (!names.length) return null;
	return (
		<form class="card wide row-form" data-test={'quota-' + kind} onSubmit={(e) => { e.preventDefault(); run(false); }}>
			<h2>Quota</h2>
			<label>{kind === 'users' ? 'User' : 'Bucket'}
				<select name="quota-target" value={target} onChange={(e) => setName(e.currentTarget.value)}>
					{names.map((n) => <option key={n} value={n}>{n}</option>)}
				</select>
			</label>
			<label>Max bytes
				<input name="max-bytes" placeholder="no limit (e.g. 10 GiB)" value={maxBytes}
					onInput={(e) => setMaxBytes(e.currentTarget.value)} />
			</label>
			<label>Max objects
				<input name="max-objects" inputMode="numeric" placeholder="no limit" value={maxObjects}
					onInput={(e) => setMaxObjects(e.currentTarget.value)} />
			</label>
			<button class="btn btn-primary" type="submit" disabled={busy} data-test="quota-set">Set</button>
			<button class="btn" type="button" disabled={busy} data-test="quota-clear" onClick={() => run(true)}>Clear</button>
			{done && <div class="notice small" data-test="quota-done">{done}</div>}
			<ErrorBox error={err} what="Quota not changed" />
		</form>
	);
}
