// overview.jsx — health, capacity, objects, OSDs, PG states, recovery,
// the meta members and the leader (GET cluster, osds, buckets).
import { get } from '../api.js';
import { Badge, Bar, Card, ErrorBox, Loading, Page, Recovery, Stat } from '../ui.jsx';
import { bytes, count, pgTone, usePoll } from '../util.js';

const HEALTH_TONE = { ok: 'good', degraded: 'warn', unavailable: 'bad' };

export function Overview() {
	const cl = usePoll(() => get('cluster'), 2000);
	const os = usePoll(() => get('osds'), 4000);
	const bk = usePoll(() => get('buckets'), 10000);
	const c = cl.data;
	if (!c && cl.loading) return <Page title="Overview"><Loading /></Page>;
	const sum = os.data && os.data.summary;
	const inline = os.data ? os.data.osds.reduce((a, o) => a + (o.space ? o.space.inline_bytes : 0), 0) : 0;
	let objects = null, objBytes = null, partial = false;
	if (bk.data) {
		objects = 0;
		objBytes = 0;
		for (const b of bk.data.buckets) {
			objects += b.objects ?? b.objects_at_least ?? 0;
			objBytes += b.bytes ?? b.bytes_at_least ?? 0;
			partial ||= b.count !== 'complete';
		}
	}
	const rec = c && c.pgs && c.pgs.recovery;
	const states = c && c.pgs ? Object.entries(c.pgs.states).sort((a, b) => b[1] - a[1]) : [];
	return (
		<Page title="Overview">
			<ErrorBox error={cl.error} what="Cluster status" />
			{c && (
				<>
					<div class="stats">
						<Stat label="Health" value={<Badge tone={HEALTH_TONE[c.health] || 'bad'}>{c.health}</Badge>}
							sub={'map epoch ' + c.epoch} />
						<Stat label="OSDs up / in" value={c.osds.up + ' / ' + c.osds.in}
							sub={'of ' + c.osds.total} tone={c.osds.up < c.osds.total ? 'warn' : null} />
						<Stat label="Capacity used"
							value={sum ? bytes(sum.used_bytes) : '—'}
							sub={sum ? 'of ' + bytes(sum.total_bytes) + (inline ? ' · ' + bytes(inline) + ' of it inline' : '')
								: 'asking the OSDs'} />
						<Stat label="Objects" value={objects === null ? '—' : (partial ? '≥ ' : '') + count(objects)}
							sub={objBytes === null ? '' : bytes(objBytes) + ' in ' + count(bk.data.buckets.length) + ' buckets'} />
						<Stat label="Erasure code" value={c.ec.k + ' + ' + c.ec.m} sub={c.pgs.total + ' PGs'} />
					</div>
					{sum && sum.total_bytes > 0 && (
						<Card title="Capacity">
							<Bar value={sum.used_bytes} max={sum.total_bytes}
								tone={sum.used_bytes / sum.total_bytes > 0.85 ? 'bad' : null} />
							<div class="muted small">
								{bytes(sum.used_bytes) + ' used of ' + bytes(sum.total_bytes) + ' ('
									+ (100 * sum.used_bytes / sum.total_bytes).toFixed(1) + ' %) on the OSDs'
									+ (inline ? ', ' + bytes(inline) + ' of it small shards kept inline in their metadata stores' : '')}
							</div>
						</Card>
					)}
					<div class="grid2">
						<Card title="Placement groups">
							<ul class="legend">
								{states.map(([s, n]) => (
									<li key={s}><span class={'sw pg-' + pgTone(s)} />{s}<b>{count(n)}</b></li>
								))}
							</ul>
							{rec && <Recovery rec={rec} />}
						</Card>
						<Card title="Meta members">
							<table class="table">
								<thead><tr><th>id</th><th>address</th><th>role</th><th>term</th><th>applied</th></tr></thead>
								<tbody>
									{c.members.map((m) => (
										<tr key={m.asked}>
											<td>{m.id ?? '—'}</td>
											<td class="mono">{m.address || m.asked}</td>
											<td>{m.role === 'leader' ? <Badge tone="good">leader</Badge>
												: m.role === 'unreachable' ? <Badge tone="bad">unreachable</Badge> : m.role}</td>
											<td>{m.term ?? '—'}</td>
											<td>{m.applied_index ?? '—'}</td>
										</tr>
									))}
								</tbody>
							</table>
							<div class="muted small">
								{c.leader ? 'Leader: member ' + c.leader.id + ' at ' + c.leader.address : 'No leader'}
							</div>
						</Card>
					</div>
				</>
			)}
		</Page>
	);
}
