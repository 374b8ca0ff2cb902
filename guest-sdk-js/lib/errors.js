// The plugin's error classes and their mapping onto the WIT `error` variant
// (invalid-input, not-found, forbidden, failed).
//
// componentize-js turns a value thrown from an export that returns `result<_, E>`
// into `err(E)`: an own `payload` property is taken as `E`, while a bare `Error`
// without one traps the component. So every error leaving `call` carries a
// `payload` of the shape `{ tag, val }` that the bindings expect.

/** Base class of the errors a plugin reports to the model; `kind` is the WIT case. */
export class PluginError extends Error {
  constructor(kind, message) {
    super(String(message));
    this.name = new.target.name;
    this.kind = kind;
    Object.defineProperty(this, "payload", {
      value: { tag: kind, val: this.message },
      enumerable: false,
    });
  }
}

/** The input passed the schema but is still unacceptable. */
export class InvalidInput extends PluginError {
  constructor(message) {
    super("invalid-input", message);
  }
}

/** Something the input names does not exist. */
export class NotFound extends PluginError {
  constructor(message) {
    super("not-found", message);
  }
}

/** The plugin was not allowed to do what the operation needed. */
export class Forbidden extends PluginError {
  constructor(message) {
    super("forbidden", message);
  }
}

/** The operation ran and failed. */
export class Failed extends PluginError {
  constructor(message) {
    super("failed", message);
  }
}

/**
 * Any thrown value as a PluginError: plugin errors pass through, anything else
 * (a bug, a TypeError) becomes `failed` with its message so the model still gets
 * a typed, readable error instead of a trapped component.
 */
export function toPluginError(thrown) {
  if (thrown instanceof PluginError) return thrown;
  if (thrown instanceof Error) {
    const prefix = thrown.name && thrown.name !== "Error" ? `${thrown.name}: ` : "";
    return new Failed(prefix + thrown.message);
  }
  return new Failed(String(thrown));
}
