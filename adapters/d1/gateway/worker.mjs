// Waypost's D1/R2 gateway: the smallest Worker that lets the reference (or anything holding the
// shared secret) run D1 batches and create-only R2 writes over HTTP. No SQL of its own.
//
//   POST   /d1/batch   {"statements": [{"sql": "...", "params": [...]}]}
//                      → {"results": [{"columns": [...], "rows": [[...], ...]}, ...]}
//   PUT    /r2/KEY     body, headers content-length and x-sha256 (hex): create-only
//                      → 201 created / 200 already present, {"size", "sha256"} of the stored object
//   HEAD   /r2/KEY     → x-size and x-sha256 headers, or 404
//   GET    /r2/KEY     → the bytes, or 404; with "range: bytes=FIRST-LAST" (one closed range within
//                      the object) → 206, only those bytes, read as a range from R2
//   DELETE /r2/KEY     → 204
//
// Parameters arrive as JSON: {"b64": "..."} is a BLOB and {"int": "123"} a 64-bit integer kept as
// decimal text (SQL casts it), never a JavaScript number. BLOB columns return as {"b64": "..."}.

function fromBase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function toBase64(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text);
}

function bindable(value) {
  if (value !== null && typeof value === "object") {
    if ("b64" in value) return fromBase64(value.b64);
    if ("int" in value) return value.int;
  }
  return value;
}

function cell(value) {
  if (Array.isArray(value)) return { b64: toBase64(value) };
  if (value instanceof ArrayBuffer) return { b64: toBase64(new Uint8Array(value)) };
  return value;
}

function failure(status, kind, message) {
  return Response.json({ error: { kind, message } }, { status });
}

async function digest(text) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

async function authorised(request, env) {
  const given = request.headers.get("authorization") || "";
  return crypto.subtle.timingSafeEqual(await digest(given), await digest(`Bearer ${env.GATEWAY_SECRET}`));
}

// SQLite refused a statement (a constraint, a trigger, bad SQL): retrying cannot help. Anything
// else (D1 overloaded, a lost connection, a reset object) is temporary: 503, retry the request.
const SQL_ERROR = /SQLITE_(ERROR|CONSTRAINT|MISMATCH|RANGE|TOOBIG|AUTH)|no such |syntax error|not authorized|To execute a transaction/;

async function batch(request, env) {
  let prepared;
  try {
    const { statements } = await request.json();
    prepared = statements.map(({ sql, params }) => env.DB.prepare(sql).bind(...params.map(bindable)));
  } catch (error) {
    return failure(400, "request", `not a batch: ${error}`);
  }
  let results;
  try {
    results = await env.DB.batch(prepared);
  } catch (error) {
    // D1 rolled the whole batch back.
    const message = String(error.cause || error);
    return SQL_ERROR.test(message) ? failure(422, "sql", message) : failure(503, "d1", message);
  }
  const out = [];
  for (const { results: rows } of results) {
    const columns = rows.length ? Object.keys(rows[0]) : [];
    // Rows arrive as objects: a repeated column name keeps one value and integer-like names move
    // first, so either would silently change a row's shape. Shared SQL aliases such columns.
    if (columns.some((name) => /^[0-9]+$/.test(name))) {
      return failure(422, "sql", `alias the integer-like column names in: ${columns.join(", ")}`);
    }
    out.push({ columns, rows: rows.map((row) => Object.values(row).map(cell)) });
  }
  return Response.json({ results: out });
}

function facts(object) {
  return { size: object.size, sha256: object.checksums.sha256 ? toHex(object.checksums.sha256) : null };
}

function toHex(buffer) {
  return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function object(request, env, key) {
  switch (request.method) {
    case "PUT": {
      const sha256 = request.headers.get("x-sha256");
      if (!sha256) return failure(400, "request", "x-sha256 is required");
      let stored;
      try {
        stored = await env.BLOBS.put(key, request.body, { sha256, onlyIf: { etagDoesNotMatch: "*" } });
      } catch (error) {
        // Only bytes whose SHA-256 differs are the sender's fault; the rest is R2's and temporary.
        const digest = /checksum|SHA-256|digest/i.test(String(error));
        return digest ? failure(422, "digest", String(error)) : failure(503, "r2", String(error));
      }
      if (stored) return Response.json(facts(stored), { status: 201 });
      const existing = await env.BLOBS.head(key);
      return Response.json(facts(existing), { status: 200 });
    }
    case "HEAD": {
      const found = await env.BLOBS.head(key);
      if (!found) return new Response(null, { status: 404 });
      const { size, sha256 } = facts(found);
      return new Response(null, { headers: { "x-size": String(size), "x-sha256": sha256 || "" } });
    }
    case "GET": {
      const wanted = /^bytes=(\d+)-(\d+)$/.exec(request.headers.get("range") || "");
      if (wanted && Number(wanted[2]) >= Number(wanted[1])) {
        const offset = Number(wanted[1]);
        const length = Number(wanted[2]) - offset + 1;
        const found = await env.BLOBS.get(key, { range: { offset, length } });
        if (!found) return failure(404, "missing", key);
        return new Response(found.body, { status: 206, headers: {
          "content-length": String(length),
          "content-range": `bytes ${offset}-${offset + length - 1}/${found.size}` } });
      }
      const found = await env.BLOBS.get(key);
      if (!found) return failure(404, "missing", key);
      return new Response(found.body, { headers: { "content-length": String(found.size) } });
    }
    case "DELETE":
      await env.BLOBS.delete(key);
      return new Response(null, { status: 204 });
    default:
      return failure(405, "request", request.method);
  }
}

export default {
  async fetch(request, env) {
    // Without a configured secret nothing is let in (not even "Bearer undefined").
    if (!env.GATEWAY_SECRET) return failure(500, "config", "the gateway has no GATEWAY_SECRET");
    if (!(await authorised(request, env))) return failure(401, "auth", "wrong or missing gateway secret");
    const { pathname } = new URL(request.url);
    if (pathname === "/d1/batch" && request.method === "POST") return batch(request, env);
    if (pathname.startsWith("/r2/") && pathname.length > 4) return object(request, env, pathname.slice(4));
    return failure(404, "request", pathname);
  },
};
