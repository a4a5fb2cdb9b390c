// ui.jsx — small building blocks the pages share: cards, notices, a
// confirm dialog, a progress bar.
import { useEffect, useRef } from 'preact/hooks';
import { bytes, count, duration } from './util.js';

export function Page({ title, actions, children }) {
	return (
		<section class="page">
			<header class="page-head">
				<h1>{title}</h1>
				<div class="page-actions">{actions}</div>
			</header>
			{children}
		</section>
	);
}

export function Card({ title, children, wide }) {
	return (
		<div class={'card' + (wide ? ' wide' : '')}>
			{title && <h2>{title}</h2>}
			{children}
		</div>
	);
}

export function Stat({ label, value, sub, tone }) {
	return (
		<div class={'stat' + (tone ? ' tone-' + tone : '')}>
			<div class="stat-label">{label}</div>
			<div class="stat-value">{value}</div>
			{sub && <div class="stat-sub">{sub}</div>}
		</div>
	);
}

export function ErrorBox({ error, what }) {
	if (!error) return null;
	return (
		<div class="notice error" role="alert">
			<strong>{what || 'Could not load'}:</strong> {error.message}
			{error.code && <span class="code"> ({error.code})</span>}
		</div>
	);
}

export function Empty({ children }) {
	return <div class="empty">{children}</div>;
}

export function Loading() {
	return <div class="loading">Loading…</div>;
}

export function Bar({ value, max, tone }) {
	const pct = max > 0 ? Math.min(100, (100 * value) / max) : 0;
	return (
		<div class="bar" role="progressbar" aria-valuenow={Math.round(pct)} aria-valuemin="0"
			aria-valuemax="100">
			<div class={'bar-fill' + (tone ? ' tone-' + tone : '')} style={{ width: pct + '%' }} />
		</div>
	);
}

// A modal confirm: text, a primary action and Cancel. Escape cancels.
export function Confirm({ title, children, action, danger, onOk, onCancel, busy }) {
	const ok = useRef(null);
	useEffect(() => {
		if (ok.current) ok.current.focus();
		const key = (e) => e.key === 'Escape' && onCancel();
		document.addEventListener('keydown', key);
		return () => document.removeEventListener('keydown', key);
	}, []);
	return (
		<div class="modal-back">
			<div class="modal" role="dialog" aria-modal="true" aria-label={title}>
				<h2>{title}</h2>
				<div class="modal-body">{children}</div>
				<div class="modal-actions">
					<button type="button" class="btn" onClick={onCancel} disabled={busy}>Cancel</button>
					<button type="button" ref={ok} class={'btn ' + (danger ? 'btn-danger' : 'btn-primary')}
						onClick={onOk} disabled={busy} data-test="confirm">{action}</button>
				</div>
			</div>
		</div>
	);
}

export function Badge({ tone, children }) {
	return <span class={'badge tone-' + tone}>{children}</span>;
}

// The recovery's progress, rate and ETA (GET cluster's or pgs' recovery).
export function Recovery({ rec }) {
	const busy = rec.stripes_missing > 0 || rec.bytes_missing > 0;
	const permille = rec.progress_permille ?? (busy ? 0 : 1000);
	return (
		<div class="recovery" data-test="recovery">
			<h3>Recovery</h3>
			{busy ? (
				<>
					<Bar value={permille} max={1000} tone="info" />
					<div class="small">
						{(permille / 10).toFixed(1)} % · {bytes(rec.bytes_missing)} to rebuild
						({count(rec.stripes_missing)} stripes) · {bytes(rec.rate_bytes_per_s)}/s ·
						ETA {duration(rec.eta_s)}
					</div>
				</>
			) : (
				<div class="small muted">No stripes missing: nothing to rebuild.</div>
			)}
			{rec.unfound > 0 && <div class="notice error">{count(rec.unfound)} stripes unfound</div>}
		</div>
	);
}
