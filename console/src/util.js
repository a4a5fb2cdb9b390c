// util.js — formatting and a polling hook shared by the pages.
import { useEffect, useRef, useState } from 'preact/hooks';

export function bytes(n) {
	if (n === null || n === undefined) return '—';
	const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
	let i = 0;
	while (n >= 1024 && i < u.length - 1) {
		n /= 1024;
		i++;
	}
	return (i ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : String(n)) + ' ' + u[i];
}

export function count(n) {
	return n === null || n === undefined ? '—' : Number(n).toLocaleString('en-US');
}

export function duration(s) {
	if (!s) return '—';
	if (s < 60) return s + ' s';
	if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
	return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
}

export function micros(us) {
	if (us === null || us === undefined || Number.isNaN(us)) return '—';
	if (us < 1000) return Math.round(us) + ' µs';
	if (us < 1e6) return (us / 1000).toFixed(us < 10000 ? 2 : 1) + ' ms';
	return (us / 1e6).toFixed(2) + ' s';
}

export function when(ms) {
	return ms ? new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '—';
}

// Fetch with fn() now and every period_ms while mounted; returns
// { data, error, loading, reload }. A failed poll keeps the last data.
export function usePoll(fn, period_ms, deps = []) {
	const [state, setState] = useState({ data: null, error: null, loading: true });
	const live = useRef(true);
	const tick = useRef(0);
	const run = async () => {
		const mine = ++tick.current;
		try {
			const data = await fn();
			if (live.current && mine === tick.current) setState({ data, error: null, loading: false });
		} catch (error) {
			if (live.current && mine === tick.current)
				setState((s) => ({ data: s.data, error, loading: false }));
		}
	};
	useEffect(() => {
		live.current = true;
		run();
		const t = period_ms ? setInterval(run, period_ms) : null;
		return () => {
			live.current = false;
			if (t) clearInterval(t);
		};
	}, deps);
	return { ...state, reload: run };
}

// A PG state's colour class: the worst word in it wins.
export function pgTone(state) {
	if (/incomplete|down|unfound/.test(state)) return 'bad';
	if (/recovering|backfilling/.test(state)) return 'info';
	if (/degraded/.test(state)) return 'warn';
	if (/remapped/.test(state)) return 'moved';
	if (state === 'active+clean') return 'good';
	return 'other';
}
