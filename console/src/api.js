// api.js — the admin API as the console uses it (docs/admin-api.md): a
// session token from POST /api/v1/login kept in sessionStorage (gone when
// the tab closes) and sent as "Authorization: Bearer"; every change also
// carries X-IOLake-Console. A 401 on any call ends the session: the app
// goes back to the login page with the reason.

const KEY = 'iolake.session';
let onExpired = () => {};

export class ApiError extends Error {
	constructor(status, code, message) {
		super(message || code || 'HTTP ' + status);
		this.status = status;
		this.code = code;
	}
}

export function session() {
	try {
		return JSON.parse(sessionStorage.getItem(KEY) || 'null');
	} catch {
		return null;
	}
}

export function setOnExpired(fn) {
	onExpired = fn;
}

async function call(method, path, body, token) {
	const headers = { Accept: 'application/json' };
	if (token) headers.Authorization = 'Bearer ' + token;
	if (method !== 'GET') headers['X-IOLake-Console'] = '1';
	if (body !== undefined) headers['Content-Type'] = 'application/json';
	let r;
	try {
		r = await fetch('/api/v1/' + path, {
			method, headers, credentials: 'same-origin', cache: 'no-store',
			body: body === undefined ? undefined : JSON.stringify(body),
		});
	} catch (e) {
		throw new ApiError(0, 'NetworkError', 'the admin API did not answer (' + e.message + ')');
	}
	let doc = null;
	try {
		doc = await r.json();
	} catch {
		doc = null;
	}
	if (!r.ok) {
		throw new ApiError(r.status, doc && doc.error, doc && doc.message);
	}
	return doc;
}

export async function login(accessKey, secretKey) {
	const doc = await call('POST', 'login', { access_key: accessKey, secret_key: secretKey });
	const s = { token: doc.token, user: doc.user, expires_ms: doc.expires_ms };
	sessionStorage.setItem(KEY, JSON.stringify(s));
	return s;
}

export async function logout() {
	const s = session();
	sessionStorage.removeItem(KEY);
	try {
		await call('POST', 'logout', undefined, s && s.token);
	} catch {
		/* the session is gone on this side either way */
	}
}

// An authenticated call: resolves to the JSON document; on 401 the
// session ends (onExpired) and the promise rejects.
export async function api(method, path, body) {
	const s = session();
	if (!s) {
		onExpired('Please log in.');
		throw new ApiError(401, 'Unauthenticated', 'not logged in');
	}
	try {
		return await call(method, path, body, s.token);
	} catch (e) {
		if (e.status === 401) {
			sessionStorage.removeItem(KEY);
			onExpired(e.code === 'ExpiredToken' ? 'Your session expired: log in again.'
				: 'Your session ended (' + (e.code || 'unauthenticated') + '): log in again.');
		}
		throw e;
	}
}

export const get = (path) => api('GET', path);
