// pgs.jsx — every PG as a square coloured by its state, a legend with the
// counts by state, the recovery's progress and ETA (GET pgs), and a
// highlight of the PGs one OSD holds.
import { useState } from 'preact/hooks';
import { get } from '../api.js';
import { Card, Empty, ErrorBox, Loading, Page, Recovery } from '../ui.jsx';
import { count, duration, pgTone, usePoll } from '../util.js';

const KEY = [['good', 'active+clean'], ['warn', 'degraded'], ['info', 'recovering, backfilling'],
	['moved', 'remapped'], ['bad', 'incomplete'], ['other', 'other']];

export function Pgs() {
	const pg = usePoll(() => get('pgs'), 2000);
	const [osd, setOsd] = useState('');
	const [sel, setSel] = useState(null);
	const d = pg.data;
	const osdIds = d ? [...new Set(d.pgs.flatMap((p) => p.osds.filter((o) => o >= 0)))].sort((a, b) => a - b) : [];
	const states = d ? Object.entries(d.states).sort((a, b) => b[1] - a[1]) : [];
	const picked = d && sel !== null ? d.pgs.find((p) => p.pg === sel) : null;
	return (
		<Page title="Placement groups" actions={d && (
			<label class="inline">Highlight OSD{' '}
				<select value={osd} onChange={(e) => setOsd(e.currentTarget.value)}>
					<option value="">none</option>
					{osdIds.map((id) => <option key={id} value={id}>osd.{id}</option>)}
				</select>
			</label>
		)}>
			<ErrorBox error={pg.error} what="PGs" />
			{!d && pg.loading && <Loading />}
			{d && d.total === 0 && <Empty>The cluster map has no placement groups yet.</Empty>}
			{d && d.total > 0 && (
				<>
					<div class="grid2 pg-top">
						<Card title={count(d.total) + ' PGs · map epoch ' + d.epoch}>
							<ul class="legend" data-test="pg-legend">
								{states.map(([s, n]) => (
									<li key={s} data-state={s}><span class={'sw pg-' + pgTone(s)} />{s}<b>{count(n)}</b></li>
								))}
							</ul>
						</Card>
						<Card><Recovery rec={d.recovery} /></Card>
					</div>
					<div class="card wide">
						<div class="pg-grid" data-test="pg-grid">
							{d.pgs.map((p) => {
								const dim = osd !== '' && !p.osds.includes(Number(osd));
								return (
									<button type="button" key={p.pg} data-pg={p.pg} data-state={p.state} data-osds={p.osds.join(',')}
										class={'pg pg-' + pgTone(p.state) + (dim ? ' dim' : '') + (sel === p.pg ? ' sel' : '')}
										title={'PG ' + p.pg + ': ' + p.state + ' · OSDs ' + p.osds.join(', ')}
										onClick={() => setSel(p.pg === sel ? null : p.pg)} />
								);
							})}
						</div>
						<ul class="key small" aria-label="colours">
							{KEY.map(([tone, label]) => <li key={tone}><span class={'sw pg-' + tone} />{label}</li>)}
						</ul>
						{picked ? (
							<div class="pg-detail small">
								<b>PG {picked.pg}</b> · {picked.state} · OSDs{' '}
								{picked.osds.map((o, i) => (
									<span key={i} class={'mono' + (picked.up[i] ? '' : ' down')}>{o < 0 ? '∅' : 'osd.' + o}{i < picked.osds.length - 1 ? ', ' : ''}</span>
								))}
								{' '}· primary {picked.primary < 0 ? '—' : 'osd.' + picked.primary}
								{picked.stripes_missing > 0 && ' · ' + count(picked.stripes_missing) + ' stripes missing'}
								{picked.eta_s > 0 && ' · ETA ' + duration(picked.eta_s)}
							</div>
						) : <div class="pg-detail small muted">Click a square for its PG.</div>}
					</div>
				</>
			)}
		</Page>
	);
}
