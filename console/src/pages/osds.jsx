// osds.jsx — the OSD table (GET osds), mark out / mark in with a confirm
// (POST osds/{id}/out|in), and, while a new cluster's PGs wait for their
// OSDs, the count they wait for (PUT osds/expect; 0 places them now).
import { useState } from 'preact/hooks';
import { api, get } from '../api.js';
import { Badge, Bar, Confirm, Empty, ErrorBox, Loading, Page } from '../ui.jsx';
import { bytes, count, usePoll } from '../util.js';

export function Osds() {
	const os = usePoll(() => get('osds'), 2000);
	const [ask, setAsk] = useState(null);        // { id, out }
	const [busy, setBusy] = useState(false);
	const [actErr, setActErr] = useState(null);
	const [done, setDone] = useState(null);
	const [want, setWant] = useState('');        // the count field of the notice
	const act = async () => {
		setBusy(true);
		setActErr(null);
		try {
			if (ask.expect !== undefined) {
				const r = await api('PUT', 'osds/expect', { osds: ask.expect });
				setDone(r.placed
					? 'The placement groups are placed (map epoch ' + r.epoch + ').'
					: 'The placement groups now wait for ' + r.expect_osds + ' OSDs (map epoch ' + r.epoch + ').');
			} else {
				const r = await api('POST', 'osds/' + ask.id + (ask.out ? '/out' : '/in'));
				setDone('OSD ' + r.osd + (r.in ? ' is in' : ' is out') + ' (map epoch ' + r.epoch + ').');
			}
			os.reload();
		} catch (e) {
			setActErr(e);
		}
		setBusy(false);
		setAsk(null);
	};
	const d = os.data;
	return (
		<Page title="OSDs">
			<ErrorBox error={os.error} what="OSDs" />
			<ErrorBox error={actErr} what="The change failed" />
			{done && <div class="notice ok" data-test="osd-done">{done}</div>}
			{d && d.expect_osds > 0 && (
				<div class="notice info" data-test="osd-expect">
					The placement groups are not placed yet: this new cluster waits for {d.expect_osds} OSDs
					to be in ({d.summary.in} now), then places them all at once. No object can be written
					until then.
					<form class="inline-form" data-test="expect-form" onSubmit={(e) => {
						e.preventDefault();
						setAsk({ expect: Number(want) });
					}}>
						<label>Wait for <input type="number" name="osds" min="0" max="4096" required
							value={want} placeholder={String(d.expect_osds)}
							onInput={(e) => setWant(e.currentTarget.value)}
							data-test="expect-count" /> OSDs</label>{' '}
						<button class="btn btn-small" type="submit" data-test="expect-set">Set</button>{' '}
						<button class="btn btn-small btn-primary" type="button" data-test="expect-now"
							onClick={() => setAsk({ expect: 0 })}>Place now with the {d.summary.in} in</button>
					</form>
				</div>
			)}
			{!d && os.loading && <Loading />}
			{d && d.osds.length === 0 && <Empty>No OSD has joined the cluster yet.</Empty>}
			{d && d.osds.length > 0 && (
				<div class="card wide">
					<table class="table" data-test="osd-table">
						<thead>
							<tr><th>id</th><th>host</th><th>address</th><th>state</th><th>space</th>
								<th class="num">PGs</th><th /></tr>
						</thead>
						<tbody>
							{d.osds.map((o) => (
								<tr key={o.id} data-osd={o.id} data-state={o.state}>
									<td class="mono">osd.{o.id}</td>
									<td>{o.host}</td>
									<td class="mono small">{o.addr}</td>
									<td>
										<Badge tone={o.up ? 'good' : 'bad'}>{o.up ? 'up' : 'down'}</Badge>{' '}
										<Badge tone={o.in ? 'good' : 'warn'}>{o.in ? 'in' : 'out'}</Badge>
										{o.admin_out && <span class="muted small"> held out</span>}
									</td>
									<td class="space">
										{o.space ? (
											<>
												<Bar value={o.space.used_bytes + o.space.inline_bytes} max={o.space.total_bytes} />
												<span class="small">{bytes(o.space.used_bytes + o.space.inline_bytes)} / {bytes(o.space.total_bytes)}</span>
												{o.space.inline_bytes > 0 && <span class="small muted" title="small shards kept in the OSD's metadata store, not on its device">
													{' '}({bytes(o.space.inline_bytes)} inline)</span>}
											</>
										) : <span class="muted small">no answer ({o.space_error})</span>}
									</td>
									<td class="num">{count(o.pgs)}</td>
									<td class="actions">
										{o.in
											? <button class="btn btn-small" data-test={'out-' + o.id}
												onClick={() => setAsk({ id: o.id, out: true })}>Mark out</button>
											: <button class="btn btn-small" data-test={'in-' + o.id}
												onClick={() => setAsk({ id: o.id, out: false })}>Mark in</button>}
									</td>
								</tr>
							))}
						</tbody>
					</table>
					<div class="muted small foot">
						{d.summary.up} of {d.summary.total} up, {d.summary.in} in ·{' '}
						{bytes(d.summary.used_bytes)} used of {bytes(d.summary.total_bytes)} · map epoch {d.epoch}
					</div>
				</div>
			)}
			{ask && ask.expect !== undefined && (
				<Confirm title={ask.expect ? 'Wait for ' + ask.expect + ' OSDs?' : 'Place the PGs now?'}
					action={ask.expect ? 'Set' : 'Place now'} busy={busy}
					onOk={act} onCancel={() => setAsk(null)}>
					{ask.expect
						? <p>The placement groups are placed once {ask.expect} OSDs are in (at once if they are).</p>
						: <p>The placement groups are placed over the OSDs that are in now. OSDs that join later
							take PGs as the table moves, with data rebuilt onto them.</p>}
				</Confirm>
			)}
			{ask && ask.expect === undefined && (
				<Confirm title={(ask.out ? 'Mark OSD ' : 'Mark OSD ') + ask.id + (ask.out ? ' out?' : ' in?')}
					action={ask.out ? 'Mark out' : 'Mark in'} danger={ask.out} busy={busy}
					onOk={act} onCancel={() => setAsk(null)}>
					{ask.out
						? <p>Its placement groups move to the other OSDs and their shards are rebuilt there. The OSD stays out (even when up) until you mark it in.</p>
						: <p>The OSD takes placement groups again; data moves back to it.</p>}
				</Confirm>
			)}
		</Page>
	);
}
