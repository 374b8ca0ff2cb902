// The chat state a framework (React's useChat, ...) would give the AI SDK's
// `AbstractChat`; plain arrays here, so the tests drive the real client without one
// (in Node, and bundled into the browser app of tests/chat). No dependencies.

export class ArrayState {
  constructor(messages = []) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage = (m) => { this.messages = this.messages.concat(m); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; };
  snapshot = (v) => structuredClone(v);
}
