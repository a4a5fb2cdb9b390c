// traffic.jsx — live S3 request rate and latency: GET stats every 2 s,
// the differences between samples charted with uPlot (requests/s by kind,
// errors/s; p50/p90/p99 of the interval from the latency buckets), and a
// table per operation. The history (10 minutes) lives as long as the tab.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { get } from '../api.js';
import { Card, Empty, ErrorBox, Loading, Page } from '../ui.jsx';
import { count, micros } from '../util.js';

const PERIOD_MS = 2000;
const KEEP = 300;                 // samples: 10 minutes
const READS = /^(Get|Head|List)/;
const hist = { t: [], all: [], reads: [], writes: [], errors: [], p50: [], p90: [], p99: [] };
let last = null;                  // the previous stats document and its time
let table = [];                   // per op, the last interval

// The q-quantile of non-cumulative bucket counts (as gw_stats_quantile).
function quantile(bounds, counts, q) {
	const total = counts.reduce((a, b) => a + b, 0);
	if (!total) return null;
	const rank = q * total;
	let below = 0;
	for (let i = 0; i < bounds.length; i++) {
		if (counts[i] && below + counts[i] >= rank) {
			const lo = i ? bounds[i - 1] : 0;
			return lo + (bounds[i] - lo) * ((rank - below) / counts[i]);
		}
		below += counts[i];
	}
	return bounds[bounds.length - 1];
}

function sample(doc) {
	const now = doc.uptime_ms;
	if (last && now > last.uptime_ms) {
		const dt = (now - last.uptime_ms) / 1000;
		const nb = doc.latency_bounds_us.length + 1;
		const merged = new Array(nb).fill(0);
		let all = 0, reads = 0, writes = 0, errors = 0;
		const rows = [];
		for (const [op, o] of Object.entries(doc.ops)) {
			const p = last.ops[op] || { requests: 0, '4xx': 0, '5xx': 0, buckets: new Array(nb).fill(0) };
			const n = o.requests - p.requests;
			const err = o['4xx'] - p['4xx'] + o['5xx'] - p['5xx'];
			const d = o.buckets.map((c, i) => c - (p.buckets[i] || 0));
			d.forEach((c, i) => (merged[i] += c));
			all += n;
			errors += err;
			if (READS.test(op)) reads += n;
			else writes += n;
			rows.push({ op, rate: n / dt, err: err / dt, p50: quantile(doc.latency_bounds_us, d, 0.5),
				p99: quantile(doc.latency_bounds_us, d, 0.99), total: o.requests,
				p99_all: o.p99_us, errors_all: o['4xx'] + o['5xx'] });
		}
		table = rows.sort((a, b) => b.rate - a.rate || b.total - a.total);
		const push = (k, v) => {
			hist[k].push(v);
			if (hist[k].length > KEEP) hist[k].shift();
		};
		push('t', Date.now() / 1000);
		push('all', all / dt);
		push('reads', reads / dt);
		push('writes', writes / dt);
		push('errors', errors / dt);
		const ms = (q) => {
			const v = quantile(doc.latency_bounds_us, merged, q);
			return v === null ? null : v / 1000;
		};
		push('p50', ms(0.5));
		push('p90', ms(0.9));
		push('p99', ms(0.99));
	} else if (!last) {
		table = Object.entries(doc.ops).map(([op, o]) => ({ op, rate: null, err: null, p50: null,
			p99: null, total: o.requests, p99_all: o.p99_us, errors_all: o['4xx'] + o['5xx'] }));
	}
	last = doc;
}

function Chart({ title, series, data, unit }) {
	const box = useRef(null);
	const plot = useRef(null);
	useEffect(() => {
		const width = () => Math.max(300, box.current.clientWidth - 8);
		plot.current = new uPlot({
			width: width(), height: 220,
			legend: { live: false },
			cursor: { drag: { x: false, y: false } },
			scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(max * 1.15, unit === 'ms' ? 1 : 1)] } },
			axes: [{ stroke: '#6b7280', grid: { stroke: '#eef0f3' } },
				{ stroke: '#6b7280', grid: { stroke: '#eef0f3' }, size: 56,
					values: (u, v) => v.map((x) => (x >= 1000 ? (x / 1000).toFixed(1) + 'k' : +x.toFixed(2)) + (unit ? ' ' + unit : '')) }],
			series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: false,
				points: { show: false } }))],
		}, data(), box.current);
		const ro = new ResizeObserver(() => plot.current.setSize({ width: width(), height: 220 }));
		ro.observe(box.current);
		return () => {
			ro.disconnect();
			plot.current.destroy();
		};
	}, []);
	useEffect(() => {
		if (plot.current) plot.current.setData(data());
	});
	return (
		<Card title={title}>
			<div class="chart" ref={box} />
		</Card>
	);
}

export function Traffic() {
	const [err, setErr] = useState(null);
	const [, setTick] = useState(0);
	useEffect(() => {
		let live = true;
		const run = async () => {
			try {
				const doc = await get('stats');
				if (!live) return;
				sample(doc);
				setErr(null);
			} catch (e) {
				if (live) setErr(e);
			}
			if (live) setTick((n) => n + 1);
		};
		run();
		const t = setInterval(run, PERIOD_MS);
		return () => {
			live = false;
			clearInterval(t);
		};
	}, []);
	const ready = hist.t.length > 0;
	return (
		<Page title="Traffic">
			<ErrorBox error={err} what="Request statistics" />
			{!last && !err && <Loading />}
			{last && (
				<>
					<p class="muted small">This gateway's S3 requests, sampled every 2 s (admin API calls are not counted).</p>
					<div class="grid2">
						<Chart title="Requests / s" unit=""
							series={[{ label: 'all', color: '#2563eb' }, { label: 'reads', color: '#16a34a' },
								{ label: 'writes', color: '#d97706' }, { label: 'errors', color: '#dc2626' }]}
							data={() => [hist.t, hist.all, hist.reads, hist.writes, hist.errors]} />
						<Chart title="Latency (all operations)" unit="ms"
							series={[{ label: 'p50', color: '#16a34a' }, { label: 'p90', color: '#d97706' },
								{ label: 'p99', color: '#dc2626' }]}
							data={() => [hist.t, hist.p50, hist.p90, hist.p99]} />
					</div>
					{!ready && <div class="muted small">The charts start with the second sample.</div>}
					{table.length === 0 ? <Empty>No S3 request has reached this gateway yet.</Empty> : (
						<div class="card wide">
							<table class="table" data-test="ops-table">
								<thead><tr><th>operation</th><th class="num">req/s</th><th class="num">errors/s</th>
									<th class="num">p50</th><th class="num">p99</th><th class="num">total</th>
									<th class="num">errors</th><th class="num">p99 since start</th></tr></thead>
								<tbody>
									{table.map((r) => (
										<tr key={r.op}>
											<td>{r.op}</td>
											<td class="num">{r.rate === null ? '—' : r.rate.toFixed(1)}</td>
											<td class="num">{r.err === null ? '—' : r.err.toFixed(1)}</td>
											<td class="num">{micros(r.p50)}</td>
											<td class="num">{micros(r.p99)}</td>
											<td class="num">{count(r.total)}</td>
											<td class="num">{count(r.errors_all)}</td>
											<td class="num">{micros(r.p99_all)}</td>
										</tr>
									))}
								</tbody>
							</table>
						</div>
					)}
				</>
			)}
		</Page>
	);
}
