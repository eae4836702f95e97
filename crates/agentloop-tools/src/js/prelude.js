(function (emit) {
  const toWellFormed = String.prototype.toWellFormed;
  const apply = Reflect.apply;
  // Lone surrogates cannot leave the sandbox as UTF-8; they become U+FFFD.
  const clean = (s) => (typeof toWellFormed === 'function' ? apply(toWellFormed, s, []) : s);
  const fmt = (v) => {
    if (typeof v === 'string') return v;
    if (v instanceof Error) return `${v.name}: ${v.message}`;
    if (typeof v === 'function') return `[Function ${v.name || 'anonymous'}]`;
    if (typeof v === 'bigint') return `${v}n`;
    if (v === undefined || typeof v === 'symbol') return String(v);
    try {
      const s = JSON.stringify(v);
      return s === undefined ? String(v) : s;
    } catch (e) {
      return String(v);
    }
  };
  const writer = (stream) => (...args) => { emit(stream, clean(args.map(fmt).join(' '))); };
  const console = {
    log: writer(0), info: writer(0), debug: writer(0), trace: writer(0),
    warn: writer(1), error: writer(1),
  };
  Object.defineProperty(globalThis, 'console', {
    value: console, writable: true, configurable: true, enumerable: false,
  });
})
