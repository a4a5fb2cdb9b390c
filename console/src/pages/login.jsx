// login.jsx — the admin access key and secret -> POST /api/v1/login.
import { useState } from 'preact/hooks';
import { login } from '../api.js';

export function Login({ reason, onLogin }) {
	const [ak, setAk] = useState('');
	const [sk, setSk] = useState('');
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState(null);
	const submit = async (e) => {
		e.preventDefault();
		setBusy(true);
		setError(null);
		try {
			onLogin(await login(ak.trim(), sk));
		} catch (err) {
			setError(err.status === 401 ? 'Wrong access key or secret key.'
				: err.status === 403 ? 'This user is not an admin: the console is for admin users.'
				: err.message);
			setBusy(false);
		}
	};
	return (
		<div class="login-wrap">
			<form class="login" onSubmit={submit}>
				<div class="brand brand-login"><span class="logo" />IOLake</div>
				<p class="muted">Log in with an admin user's access key and secret key.</p>
				{reason && !error && <div class="notice info">{reason}</div>}
				{error && <div class="notice error" role="alert" data-test="login-error">{error}</div>}
				<label>Access key
					<input name="access_key" autocomplete="username" spellcheck={false} required
						value={ak} onInput={(e) => setAk(e.currentTarget.value)} />
				</label>
				<label>Secret key
					<input name="secret_key" type="password" autocomplete="current-password" required
						value={sk} onInput={(e) => setSk(e.currentTarget.value)} />
				</label>
				<button class="btn btn-primary" type="submit" disabled={busy}>
					{busy ? 'Logging in…' : 'Log in'}
				</button>
			</form>
		</div>
	);
}
