// maint.jsx — the background work that keeps the data right: the shard GC
// (GET gc: meta's queue and this gateway's worker) and each OSD's scrub and
// deep scrub (GET scrub: the OSDs' own counters).
import { get } from '../api.js';
import { Badge, Card, ErrorBox, Loading, Page, Stat } from '../ui.jsx';
import { bytes, count, duration, usePoll, when } from '../util.js';

function Gc({ g }) {
	const q = g.queue, w = g.worker;
	return (
		<Card title="Garbage collection" wide>
			<div class="stats" data-test="gc-panel">
				<Stat label="Queue" value={count(q.entries)} sub={q.complete ? 'entries' : 'entries (bytes: first ' + count(q.scanned) + ')'}
					tone={q.entries ? 'warn' : null} />
				<Stat label="Bytes pending" value={bytes(q.bytes_pending)} sub={q.complete ? null : 'at least'} />
				<Stat label="Oldest" value={q.oldest_age_ms === null ? '—' : duration(Math.round(q.oldest_age_ms / 1000))}
					sub="since its object was written" />
				<Stat label="Freed here" value={w ? count(w.freed_entries) : '—'}
					sub={w ? bytes(w.freed_bytes) + (w.failed_entries ? ', ' + count(w.failed_entries) + ' failed' : '') : 'no worker in this process'}
					tone={w && w.failed_entries ? 'warn' : null} />
				<Stat label="Last pass" value={w && w.last_round_end_ms ? when(w.last_round_end_ms) : '—'}
					sub={w ? count(w.rounds) + ' rounds' + (w.running ? ', running' : '') : null} />
			</div>
		</Card>
	);
}

function Scrub({ s }) {
	return (
		<Card title="Scrub" wide>
			<table class="table" data-test="scrub-panel">
				<thead><tr><th>OSD</th><th>scrub</th><th>last pass</th><th class="num">shards</th><th class="num">bytes</th>
					<th class="num">errors</th><th>last deep scrub</th><th class="num">PGs</th><th class="num">repaired</th>
					<th class="num">inconsistent</th></tr></thead>
				<tbody>
					{s.osds.map((o) => (
						<tr key={o.id} data-osd={o.id}>
							<td>{o.id} <span class="muted small">{o.host}</span></td>
							{o.scrub ? (
								<>
									<td>{!o.scrub.enabled ? <span class="muted">off</span>
										: o.scrub.running ? <Badge tone="info">running</Badge> : <Badge tone="good">idle</Badge>}</td>
									<td class="small">{o.scrub.last_pass_end_ms ? when(o.scrub.last_pass_end_ms) : 'never'}</td>
									<td class="num">{count(o.scrub.shards_checked)}</td>
									<td class="num">{bytes(o.scrub.bytes_checked + o.deep_scrub.bytes_checked)}</td>
									<td class="num">{o.scrub.errors_found ? <Badge tone="bad">{count(o.scrub.errors_found)}</Badge> : 0}</td>
									<td class="small">{o.deep_scrub.last_pg_end_ms ? when(o.deep_scrub.last_pg_end_ms)
										: o.deep_scrub.enabled ? 'not since start' : 'off'}</td>
									<td class="num">{count(o.deep_scrub.pgs_done)}</td>
									<td class="num">{count(o.deep_scrub.shards_repaired)}</td>
									<td class="num">{o.deep_scrub.stripes_inconsistent ? <Badge tone="bad">{count(o.deep_scrub.stripes_inconsistent)}</Badge> : 0}</td>
								</>
							) : <td colSpan={9} class="muted">no answer ({o.scrub_error})</td>}
						</tr>
					))}
				</tbody>
			</table>
			<div class="muted small foot">
				Counters since each OSD started, except passes; scrub reads every shard and checks its checksum,
				deep scrub compares all shards of each stripe of the PGs the OSD is the primary of.
			</div>
		</Card>
	);
}

export function Maint() {
	const gc = usePoll(() => get('gc'), 5000);
	const sc = usePoll(() => get('scrub'), 5000);
	return (
		<Page title="Maintenance">
			<ErrorBox error={gc.error} what="GC status" />
			{!gc.data && gc.loading && <Loading />}
			{gc.data && <Gc g={gc.data} />}
			<ErrorBox error={sc.error} what="Scrub status" />
			{!sc.data && sc.loading && <Loading />}
			{sc.data && <Scrub s={sc.data} />}
		</Page>
	);
}
