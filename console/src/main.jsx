// main.jsx — the IOLake console: a login page, then a shell with one page
// per resource of the admin API, chosen by the URL's hash (#/osds, ...).
// Served by the gateway's admin API port (gateway/admin_api_console.c);
// every call goes to /api/v1/ on that same origin, never to the S3 port.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './app.css';
import { logout, session, setOnExpired } from './api.js';
import { Buckets } from './pages/buckets.jsx';
import { Login } from './pages/login.jsx';
import { Maint } from './pages/maint.jsx';
import { Osds } from './pages/osds.jsx';
import { Overview } from './pages/overview.jsx';
import { Pgs } from './pages/pgs.jsx';
import { Traffic } from './pages/traffic.jsx';
import { Users } from './pages/users.jsx';

const PAGES = [
	['overview', 'Overview', Overview],
	['osds', 'OSDs', Osds],
	['pgs', 'PGs', Pgs],
	['traffic', 'Traffic', Traffic],
	['buckets', 'Buckets', Buckets],
	['users', 'Users', Users],
	['maint', 'Maintenance', Maint],
];

function route() {
	const id = location.hash.replace(/^#\/?/, '');
	return PAGES.find((p) => p[0] === id) || PAGES[0];
}

function App() {
	const [sess, setSess] = useState(session());
	const [reason, setReason] = useState(null);
	const [page, setPage] = useState(route());
	useEffect(() => {
		setOnExpired((why) => {
			setReason(why);
			setSess(null);
		});
		const onHash = () => setPage(route());
		window.addEventListener('hashchange', onHash);
		return () => window.removeEventListener('hashchange', onHash);
	}, []);
	useEffect(() => {
		document.title = sess ? page[1] + ' · IOLake console' : 'Log in · IOLake console';
	}, [sess, page]);
	if (!sess) return <Login reason={reason} onLogin={(s) => { setReason(null); setSess(s); }} />;
	const Body = page[2];
	return (
		<div class="shell">
			<nav class="side">
				<div class="brand"><span class="logo" />IOLake</div>
				<ul>
					{PAGES.map(([id, label]) => (
						<li key={id}><a href={'#/' + id} class={page[0] === id ? 'on' : ''} data-nav={id}>{label}</a></li>
					))}
				</ul>
				<div class="who">
					<div class="small muted">Logged in as</div>
					<div class="user">{sess.user}</div>
					<button class="btn btn-small" data-test="logout"
						onClick={async () => { await logout(); setReason('You logged out.'); setSess(null); }}>
						Log out
					</button>
				</div>
			</nav>
			<main class="main" key={page[0]}><Body /></main>
		</div>
	);
}

render(<App />, document.getElementById('app'));
