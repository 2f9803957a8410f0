package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// This file is the legacy HTTP+SSE transport (MCP 2024-11-05): a GET opens
// an SSE stream whose first event names the endpoint to POST messages to;
// every message from the server arrives on that stream.

// connectLegacy opens the legacy SSE stream and waits for its endpoint
// event. original is the refused first POST's error: when the URL turns out
// to serve no SSE stream either, that is the more telling answer. When ctx
// is done first, it gives up the stream and returns ctx.Err().
func (c *RemoteConn) connectLegacy(ctx context.Context, original error) error {
	w := c.waitFor(ctx)
	resp, sc, endpoint, err := c.openLegacy(w.ctx, original)
	if !w.waitEnded() {
		if err == nil {
			resp.Body.Close()
		}
		w.end()
		return ctx.Err()
	}
	if err != nil {
		w.end()
		return err
	}
	c.established(TransportSSE, endpoint)
	c.log.Info("using the legacy HTTP+SSE transport", "url", c.logURL)
	if !c.goAsync(func() {
		defer w.end()
		c.readLegacy(resp, sc)
	}) {
		resp.Body.Close()
		w.end()
		return ErrRemoteClosed
	}
	return nil
}

// openLegacy opens the legacy SSE stream with a GET bound to ctx and reads
// it up to its endpoint event. On success the caller owns resp.Body.
func (c *RemoteConn) openLegacy(ctx context.Context, original error) (*http.Response, *sseScanner, *url.URL, error) {
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, nil, nil, err
	}
	if !success(resp) {
		status, _ := readErrorBody(resp)
		resp.Body.Close()
		if fallbackStatus(resp.StatusCode) {
			return nil, nil, nil, original // no SSE endpoint here either
		}
		return nil, nil, nil, c.statusError(http.MethodGet, status)
	}
	if mediaType(resp) != "text/event-stream" {
		resp.Body.Close()
		return nil, nil, nil, original
	}
	sc := newSSEScanner(resp.Body, c.max)
	for {
		ev, err := sc.next()
		if err != nil {
			resp.Body.Close()
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, nil, fmt.Errorf("the legacy SSE stream ended before naming its endpoint: %w", err)
		}
		if ev.name != "endpoint" {
			continue
		}
		endpoint, err := c.endpoint.Parse(strings.TrimSpace(string(ev.data)))
		if err != nil || endpoint.Scheme != c.endpoint.Scheme || endpoint.Host != c.endpoint.Host {
			// Messages carry the configured headers: never to another origin.
			resp.Body.Close()
			return nil, nil, nil, fmt.Errorf("%w: the legacy SSE endpoint event names no URL on the server's origin", ErrRemoteProtocol)
		}
		return resp, sc, endpoint, nil
	}
}

// readLegacy delivers the messages of the legacy SSE stream. The session
// lives as long as the stream: when it ends, so does the connection.
func (c *RemoteConn) readLegacy(resp *http.Response, sc *sseScanner) {
	defer resp.Body.Close()
	err := c.consume(sc, nil)
	if err == nil || c.usable() != nil {
		return
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	c.fail(fmt.Errorf("the legacy SSE stream ended: %w", err))
}

// postLegacy POSTs a message to the session endpoint. The server accepts
// it at once (202); the answer comes on the SSE stream. When ctx is done
// first, the POST is given up.
func (c *RemoteConn) postLegacy(ctx context.Context, out *outbound) error {
	c.mu.Lock()
	endpoint := c.postURL
	c.mu.Unlock()
	w := c.waitFor(ctx)
	refusing := false // the refusal is read in the background, which ends w
	defer func() {
		if !refusing {
			w.end()
		}
	}()
	req, err := c.newRequest(w.ctx, http.MethodPost, endpoint, out)
	if err != nil {
		return err
	}
	resp, err := c.do(req)
	if !w.waitEnded() {
		if err == nil {
			resp.Body.Close()
		}
		return c.gaveUp(ctx, out)
	}
	if err != nil {
		if c.usable() != nil {
			return ErrRemoteClosed
		}
		err = fmt.Errorf("POST to the legacy SSE endpoint: %w", err)
		c.fail(err)
		return err
	}
	if success(resp) {
		resp.Body.Close()
		return nil
	}
	if resp.StatusCode == http.StatusNotFound {
		resp.Body.Close()
		c.fail(sessionMissing(resp.StatusCode))
		return c.failErrIfFailed()
	}
	refusing = c.goAsync(func() {
		defer w.end()
		defer resp.Body.Close()
		c.refused(out, resp)
	})
	if !refusing {
		resp.Body.Close()
		return ErrRemoteClosed
	}
	return nil
}
