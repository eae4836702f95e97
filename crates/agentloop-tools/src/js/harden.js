(function () {
  // Built-in array methods loop over `length` in native code, where the
  // interrupt handler is never consulted; a sparse array or array-like with
  // a huge length would hold the thread past the time limit. Dense arrays
  // that large cannot fit in the heap limit, so refusing such lengths only
  // refuses that abuse.
  const LIMIT = 2 ** 24;
  const { apply, ownKeys, getOwnPropertyDescriptor, defineProperty } = Reflect;
  const skip = new Set(['constructor', 'keys', 'values', 'entries']);
  const lengthOf = (o) => {
    if (o === null || o === undefined) return 0;
    const n = Number(Object(o).length);
    return n > 0 ? n : 0;
  };
  const captureStackTrace = Error.captureStackTrace;
  const refuse = (name, len, from) => {
    const error = new RangeError(`Array.prototype.${name}: length ${len} is over the sandbox limit of ${LIMIT}`);
    // Point the stack at the caller, not at this wrapper.
    if (typeof captureStackTrace === 'function') captureStackTrace(error, from);
    return error;
  };
  const proto = Array.prototype;
  for (const key of ownKeys(proto)) {
    if (typeof key !== 'string' || skip.has(key)) continue;
    const desc = getOwnPropertyDescriptor(proto, key);
    const original = desc.value;
    if (typeof original !== 'function') continue;
    const spreads = key === 'concat';
    const wrapped = {
      [key](...args) {
        const len = lengthOf(this);
        if (len > LIMIT) throw refuse(key, len, wrapped);
        if (spreads) {
          for (let i = 0; i < args.length; i++) {
            const a = args[i];
            if (a !== null && typeof a === 'object' && lengthOf(a) > LIMIT) throw refuse(key, lengthOf(a), wrapped);
          }
        }
        return apply(original, this, args);
      },
    }[key];
    defineProperty(wrapped, 'length', { value: original.length });
    defineProperty(proto, key, {
      value: wrapped,
      writable: desc.writable,
      enumerable: desc.enumerable,
      configurable: desc.configurable,
    });
  }
})();
