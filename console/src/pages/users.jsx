// users.jsx — users (GET users), create one (POST users: the new secret
// is shown once, here, and never again), delete one with a confirm
// (DELETE users/{name}), a user's quota over its buckets (quota.jsx).
import { useState } from 'preact/hooks';
import { api, get, session } from '../api.js';
import { Badge, Confirm, Empty, ErrorBox, Loading, Page } from '../ui.jsx';
import { usePoll, when } from '../util.js';
import { QuotaEditor, quotaText } from './quota.jsx';

function NewUser({ onCreated }) {
	const [name, setName] = useState('');
	const [admin, setAdmin] = useState(false);
	const [busy, setBusy] = useState(false);
	const [err, setErr] = useState(null);
	const submit = async (e) => {
		e.preventDefault();
		setBusy(true);
		setErr(null);
		try {
			onCreated(await api('POST', 'users', { name: name.trim(), admin }));
			setName('');
			setAdmin(false);
		} catch (x) {
			setErr(x);
		}
		setBusy(false);
	};
	return (
		<form class="card wide row-form" onSubmit={submit} data-test="new-user">
			<h2>New user</h2>
			<label>Name
				<input name="name" required maxLength={64} pattern="[A-Za-z0-9+=,.@_\-]+" spellcheck={false}
					title="1 to 64 of A-Z a-z 0-9 + = , . @ _ -" value={name}
					onInput={(e) => setName(e.currentTarget.value)} />
			</label>
			<label class="check"><input type="checkbox" checked={admin}
				onChange={(e) => setAdmin(e.currentTarget.checked)} /> admin</label>
			<button class="btn btn-primary" type="submit" disabled={busy}>{busy ? 'Creating…' : 'Create'}</button>
			<ErrorBox error={err} what="Not created" />
		</form>
	);
}

function Secret({ created, onClose }) {
	return (
		<div class="card wide secret" role="status" data-test="new-secret">
			<h2>User {created.user} created</h2>
			<p>Copy the secret key now: <b>it is shown this once</b> and cannot be read again.</p>
			<dl class="kv">
				<dt>Access key</dt><dd class="mono" data-test="new-access-key">{created.access_key}</dd>
				<dt>Secret key</dt><dd class="mono" data-test="new-secret-key">{created.secret_key}</dd>
			</dl>
			<button class="btn" onClick={onClose}>Done, I copied it</button>
		</div>
	);
}

export function Users() {
	const us = usePoll(() => get('users'), 0);
	const [created, setCreated] = useState(null);
	const [del, setDel] = useState(null);
	const [busy, setBusy] = useState(false);
	const [err, setErr] = useState(null);
	const me = session();
	const remove = async () => {
		setBusy(true);
		setErr(null);
		try {
			await api('DELETE', 'users/' + encodeURIComponent(del));
			us.reload();
		} catch (x) {
			setErr(x);
		}
		setBusy(false);
		setDel(null);
	};
	const d = us.data;
	return (
		<Page title="Users">
			{created ? <Secret created={created} onClose={() => setCreated(null)} />
				: <NewUser onCreated={(c) => { setCreated(c); us.reload(); }} />}
			<ErrorBox error={us.error} what="Users" />
			<ErrorBox error={err} what="Not deleted" />
			{!d && us.loading && <Loading />}
			{d && d.users.length === 0 && <Empty>No users.</Empty>}
			{d && <QuotaEditor kind="users" names={d.users.map((u) => u.name)} onDone={us.reload} />}
			{d && d.users.length > 0 && (
				<div class="card wide">
					<table class="table" data-test="user-table">
						<thead><tr><th>name</th><th>role</th><th>access keys</th><th>quota</th><th>created</th><th /></tr></thead>
						<tbody>
							{d.users.map((u) => (
								<tr key={u.name} data-user={u.name}>
									<td>{u.name}{u.display_name && u.display_name !== u.name && <span class="muted"> ({u.display_name})</span>}</td>
									<td>{u.admin ? <Badge tone="info">admin</Badge> : 'user'}</td>
									<td class="mono small">{u.access_keys.join(', ') || '—'}</td>
									<td class="small" data-test="user-quota">{quotaText(u.quota)}</td>
									<td class="small">{when(u.created_ms)}</td>
									<td class="actions">
										{me && u.name === me.user ? <span class="muted small">you</span>
											: <button class="btn btn-small btn-danger-outline" data-test={'delete-' + u.name}
												onClick={() => setDel(u.name)}>Delete</button>}
									</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
			{del && (
				<Confirm title={'Delete user ' + del + '?'} action="Delete" danger busy={busy}
					onOk={remove} onCancel={() => setDel(null)}>
					<p>The user and its access keys are deleted; S3 requests signed with them fail at once.</p>
				</Confirm>
			)}
		</Page>
	);
}
