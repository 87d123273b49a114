/**
 * A script for GraphiQL's page that makes its schema follow the key in the headers tab: GraphiQL
 * fetches it once, at open, with no key (a 401). A keyless schema request is held until the tab
 * holds a key, then sent with it; a failed one is refetched when the headers change. Nothing is stored.
 */
const SCRIPT = String.raw`(() => {
  const nativeFetch = window.fetch.bind(window);
  const HAS_KEY = /^Bearer\s+\S/i;
  let held = null;
  let schemaLoaded = false;
  let shownHeaders = null;

  const isSchemaRequest = (input, init) =>
    typeof input === 'string' && new URL(input, location.href).pathname === '/graphql' &&
    typeof init?.body === 'string' && init.body.includes('__schema');

  // The headers editor's text, line by line as the editor lays them out.
  const readHeaders = () => {
    const lines = document.querySelectorAll('section.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden) .view-line');
    return [...lines]
      .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
      .map((line) => line.textContent.replace(/\u00a0/g, ' '))
      .join('\n');
  };

  // The request's headers with what the headers tab holds, or null when that gives no key.
  const withEnteredHeaders = (init, text) => {
    let entered;
    try { entered = JSON.parse(text.trim() || '{}'); } catch { return null; }
    if (!entered || typeof entered !== 'object' || Array.isArray(entered)) return null;
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(entered)) headers.set(name, String(value));
    return HAS_KEY.test(headers.get('authorization') ?? '') ? headers : null;
  };

  const sendSchemaRequest = (input, init) =>
    nativeFetch(input, init).then((response) => { schemaLoaded = response.ok; return response; });

  window.fetch = (input, init) => {
    if (!isSchemaRequest(input, init)) return nativeFetch(input, init);
    if (HAS_KEY.test(new Headers(init.headers).get('authorization') ?? '')) return sendSchemaRequest(input, init);
    // Sent without a key (GraphiQL read its headers before one was typed, or retries with them).
    const headers = withEnteredHeaders(init, readHeaders());
    if (headers) return sendSchemaRequest(input, { ...init, headers });
    return new Promise((resolve, reject) => { held = { input, init, resolve, reject }; });
  };

  const headersChanged = (text) => {
    if (held) {
      const headers = withEnteredHeaders(held.init, text);
      if (!headers) return;
      const { input, init, resolve, reject } = held;
      held = null;
      sendSchemaRequest(input, { ...init, headers }).then(resolve, reject);
    } else if (!schemaLoaded && withEnteredHeaders(undefined, text)) {
      const refetch = document.querySelector('button[aria-label^="Re-fetch GraphQL schema"]');
      if (refetch && !refetch.disabled) refetch.click();
    }
  };

  setInterval(() => {
    const text = readHeaders();
    if (text !== shownHeaders) headersChanged((shownHeaders = text));
  }, 300);
})();`;

/** GraphiQL's page with the script inserted before GraphiQL's own. */
export function withSchemaOnKey(page: string): string {
  const root = '<div id="root"></div>';
  if (!page.includes(root)) throw new Error("GraphiQL's page has no root element to put the schema script after.");
  return page.replace(root, `${root}\n<script>${SCRIPT}</script>`);
}
