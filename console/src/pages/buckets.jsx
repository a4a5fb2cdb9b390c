// buckets.jsx — every bucket with its owner, objects, bytes and quota (GET
// buckets; counts are bounded by the API: "at least" beyond its limit), and
// the quota field (quota.jsx).
import { get } from '../api.js';
import { QuotaEditor, quotaText } from './quota.jsx';
import { Empty, ErrorBox, Loading, Page } from '../ui.jsx';
import { bytes, count, usePoll, when } from '../util.js';

function counted(b, v, atLeast, fmt) {
	if (b.count === 'complete') return fmt(v);
	if (b.count === 'error') return <span class="muted">listing failed</span>;
	if (atLeast !== undefined && atLeast !== null) return '≥ ' + fmt(atLeast);
	return <span class="muted">not counted</span>;
}

export function Buckets() {
	const bk = usePoll(() => get('buckets'), 10000);
	const d = bk.data;
	return (
		<Page title="Buckets" actions={<button class="btn btn-small" onClick={bk.reload}>Refresh</button>}>
			<ErrorBox error={bk.error} what="Buckets" />
			{!d && bk.loading && <Loading />}
			{d && d.buckets.length === 0 && <Empty>No buckets yet. Create one with any S3 client.</Empty>}
			{d && <QuotaEditor kind="buckets" names={d.buckets.map((b) => b.name)} onDone={bk.reload} />}
			{d && d.buckets.length > 0 && (
				<div class="card wide">
					<table class="table" data-test="bucket-table">
						<thead><tr><th>name</th><th>owner</th><th>region</th><th>created</th>
							<th class="num">objects</th><th class="num">bytes</th><th>quota</th></tr></thead>
						<tbody>
							{d.buckets.map((b) => (
								<tr key={b.name} data-bucket={b.name}>
									<td class="mono">{b.name}</td>
									<td>{b.owner}</td>
									<td>{b.region}</td>
									<td class="small">{when(b.created_ms)}</td>
									<td class="num">{counted(b, b.objects, b.objects_at_least, count)}</td>
									<td class="num">{counted(b, b.bytes, b.bytes_at_least, bytes)}</td>
									<td class="small" data-test="bucket-quota">{quotaText(b.quota)}</td>
								</tr>
							))}
						</tbody>
					</table>
					<div class="muted small foot">
						Objects are counted up to {count(d.count_limit_objects)} per bucket and {count(d.count_limit_buckets)} buckets
						per request; incomplete multipart uploads are not counted.
					</div>
				</div>
			)}
		</Page>
	);
}
