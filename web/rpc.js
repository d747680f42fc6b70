// JSON-RPC 2.0 to the gateway that served this page: calls over HTTP (POST /rpc, the token
// in Authorization), pushes over a WebSocket at /rpc (signed in with auth.resume).

export class RpcError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.data?.code ?? "internal";
    this.field = error.data?.field ?? null;
  }
}

const tokenKey = "tourbus.token";

/// The session token: in sessionStorage (gone with the tab), or localStorage when the user
/// asked to be remembered. Never in a URL.
export const session = {
  get token() {
    return sessionStorage.getItem(tokenKey) ?? localStorage.getItem(tokenKey);
  },
  keep(token, remember) {
    this.forget();
    (remember ? localStorage : sessionStorage).setItem(tokenKey, token);
  },
  forget() {
    sessionStorage.removeItem(tokenKey);
    localStorage.removeItem(tokenKey);
  },
};

let nextId = 1;

/// Calls `method` with `params`; its result, or a thrown RpcError.
export async function call(method, params = {}) {
  const headers = { "Content-Type": "application/json" };
  const token = session.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  const id = nextId++;
  const response = await fetch("/rpc", {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  });
  if (!response.ok) throw new RpcError({ message: `HTTP ${response.status}`, data: { code: "unavailable" } });
  const reply = await response.json();
  if (reply.error) {
    const error = new RpcError(reply.error);
    // A session that ended elsewhere: this tab is signed out too.
    if (error.code === "unauthenticated" && token && error.field === "token") session.forget();
    throw error;
  }
  return reply.result;
}

/// A WebSocket that hears the signed-in user's pushes on `topics`: `onPush({topic, id, body})`.
/// Reconnects (with a growing pause) while the page lives and the user stays signed in.
export class Pushes {
  constructor(topics, onPush) {
    this.topics = topics;
    this.onPush = onPush;
    this.pause = 1000;
    this.closed = false;
    this.open();
  }

  open() {
    const token = session.token;
    this.token = token;
    if (!token || this.closed) return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}/rpc`);
    this.ws = ws;
    ws.onopen = () => {
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "auth.resume", params: { token } }));
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "subscribe", params: { topics: this.topics } }));
    };
    ws.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.method === "push") this.onPush(message.params);
      else if (message.id === 2 && !message.error) this.pause = 1000;
    };
    ws.onclose = () => {
      if (this.closed) return;
      setTimeout(() => this.open(), this.pause);
      this.pause = Math.min(this.pause * 2, 30000);
    };
  }

  close() {
    this.closed = true;
    this.ws?.close(1000);
  }
}
