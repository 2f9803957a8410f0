package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// This file is the streamable HTTP transport (MCP 2025-03-26 and later):
// every client message is POSTed to the endpoint; the answer is a JSON body
// or an SSE stream; a GET opens a stream for server-initiated messages.

// firstContact POSTs the first message and decides the transport from the
// answer. Its failure ends the connection and is returned. When ctx is done
// first, the POST is given up and the transport stays undecided.
func (c *RemoteConn) firstContact(ctx context.Context, out *outbound) error {
	w := c.waitFor(ctx)
	answering := false // the answer is read in the background, which ends w
	defer func() {
		if !answering {
			w.end()
		}
	}()
	req, err := c.newRequest(w.ctx, http.MethodPost, c.endpoint, out)
	if err != nil {
		return c.contactFailed(err)
	}
	resp, err := c.do(req)
	var status *resilience.HTTPStatusError
	var body []byte
	if err == nil && !success(resp) {
		status, body = readErrorBody(resp) // given up too when ctx ends
		resp.Body.Close()
	}
	if !w.waitEnded() {
		if err == nil && success(resp) {
			resp.Body.Close()
		}
		return c.gaveUp(ctx, out)
	}
	if err != nil {
		return c.contactFailed(err)
	}
	if success(resp) {
		c.established(TransportStreamableHTTP, c.endpoint)
		c.noteSession(resp)
		c.log.Debug("connected", "url", c.logURL, "transport", TransportStreamableHTTP)
		answering = c.goAsync(func() {
			defer w.end()
			c.accepted(out, resp, func() {}, w.end)
		})
		if !answering {
			resp.Body.Close()
			return ErrRemoteClosed
		}
		return nil
	}
	switch {
	case fallbackStatus(resp.StatusCode) && answersCall(body, out):
		// A streamable HTTP server answering in MCP terms, such as a
		// 2026-07-28 server rejecting server/discover with a JSON-RPC
		// error: the client decides what to do with it.
		c.established(TransportStreamableHTTP, c.endpoint)
		c.noteSession(resp)
		c.goAsync(func() { c.deliverRaw(body, nil) })
		return nil
	case resp.StatusCode == http.StatusBadRequest && out.kind == framing.Request && out.method == "server/discover":
		// A streamable HTTP server of the session era refusing the
		// 2026-07-28 handshake without a JSON-RPC answer, or a legacy
		// HTTP+SSE server (the go-sdk's refuses a POST without its session
		// with 400 too): the client falls back to initialize on an error,
		// which it must get rather than a failed connection. The transport
		// stays undecided: the initialize makes first contact again.
		//
		// Method not found: what a server that does not know the method
		// answers, and what tells the client to fall back.
		answer := jsonrpc.ErrorResponse(out.calls[0], jsonrpc.CodeMethodNotFound,
			fmt.Sprintf("the server refused server/discover (HTTP %d): it speaks an earlier protocol version", resp.StatusCode), nil)
		c.goAsync(func() { c.deliverRaw(answer, nil) })
		return nil
	case fallbackStatus(resp.StatusCode):
		c.log.Debug("first POST refused; trying the legacy HTTP+SSE transport", "url", c.logURL, "status", resp.StatusCode)
		if err := c.connectLegacy(ctx, c.statusError(http.MethodPost, status)); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return c.gaveUp(ctx, out)
			}
			return c.contactFailed(err)
		}
		return c.postLegacy(ctx, out)
	default:
		return c.contactFailed(c.statusError(http.MethodPost, status))
	}
}

// fallbackStatus reports whether a refused first POST may mean a legacy
// HTTP+SSE server (the spec's backwards-compatibility rule: any 4xx), as
// opposed to credentials or throttling, which no transport change fixes.
func fallbackStatus(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired,
		http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code < 500
}

// statusError names the request that got status, keeping the typed error
// reachable for [resilience.Classify].
func (c *RemoteConn) statusError(method string, status *resilience.HTTPStatusError) error {
	return fmt.Errorf("%s %s: %w", method, c.logURL, status)
}

// contactFailed ends the connection with the first contact's failure.
func (c *RemoteConn) contactFailed(err error) error {
	if c.usable() != nil {
		return ErrRemoteClosed
	}
	c.fail(err)
	return err
}

// established records the transport the first contact settled on.
func (c *RemoteConn) established(transport string, postURL *url.URL) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transport, c.postURL = transport, postURL
}

// noteSession keeps the session id the server assigned.
func (c *RemoteConn) noteSession(resp *http.Response) {
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.sessionID {
	case "":
		c.sessionID = id // not logged: a session id can act as a credential
	case id:
	default:
		c.log.Warn("the remote server sent a different session id; keeping the first", "url", c.logURL)
	}
}

func (c *RemoteConn) hasSession() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID != ""
}

// sessionMissing is the failure of a session the server no longer knows.
// [resilience.Classify] makes it transient: a new session may work.
func sessionMissing(status int) error {
	return fmt.Errorf("the remote server ended the session (HTTP %d): %w", status, mcp.ErrSessionMissing)
}

// The states of a streamable HTTP POST, as its writer and its goroutine
// see it: the first to move it from postPending decides whether the writer
// returns nil (the server has the message, or its failure is the
// connection's) or gave up on it (the POST is cancelled and its answer, if
// any, dropped).
const (
	postPending int32 = iota
	postCommitted
	postAbandoned
)

// postStreamable POSTs a message once the transport is established. It
// returns when the server has the message; its answer is read in the
// background. When ctx is done first, the POST is given up.
func (c *RemoteConn) postStreamable(ctx context.Context, out *outbound) error {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return c.gaveUp(ctx, out)
	case <-c.closed:
		return ErrRemoteClosed
	case <-c.failed:
		return c.failErr
	}
	// A context of the POST's own, which the writer cancels if it gives up
	// (no context.AfterFunc: the writer waits in a select below anyway).
	reqCtx, cancel := context.WithCancel(c.ctx)
	req, err := c.newRequest(reqCtx, http.MethodPost, c.endpoint, out)
	if err != nil {
		cancel()
		<-c.slots
		return err
	}
	var state atomic.Int32
	commit := func() bool {
		return state.CompareAndSwap(postPending, postCommitted) || state.Load() == postCommitted
	}
	sent := make(chan struct{})
	var once sync.Once
	markSent := func() { once.Do(func() { close(sent) }) }
	if len(out.calls) > 0 {
		// A request's answer may take as long as the tool runs, and the
		// client may have to answer the server meanwhile (sampling): do not
		// wait for it, only until the request is on the wire.
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) {
				commit()
				markSent()
			},
		}))
	}
	started := c.goAsync(func() {
		defer func() { <-c.slots }()
		defer cancel()
		defer markSent()
		resp, err := c.do(req)
		if !commit() { // given up: nothing is delivered for it
			if err == nil {
				resp.Body.Close()
			}
			return
		}
		if err != nil {
			if c.usable() == nil {
				c.fail(fmt.Errorf("POST %s: %w", c.logURL, err))
			}
			return
		}
		defer resp.Body.Close()
		c.noteSession(resp)
		if !success(resp) {
			markSent()
			c.refused(out, resp)
			return
		}
		c.accepted(out, resp, markSent, cancel)
	})
	if !started {
		cancel()
		<-c.slots
		return ErrRemoteClosed
	}
	select {
	case <-sent:
		return nil
	case <-c.closed:
		return ErrRemoteClosed
	case <-ctx.Done():
	}
	if state.CompareAndSwap(postPending, postAbandoned) {
		cancel()
		return c.gaveUp(ctx, out)
	}
	select { // the server has it: sent follows at once
	case <-sent:
		return nil
	case <-c.closed:
		return ErrRemoteClosed
	}
}

// accepted handles a 2xx answer to a POST: it reads the answer to the
// requests in out, if any. sent is called once the headers are handled;
// cancel ends the POST, when what follows its answers is not worth waiting
// for (see drain).
func (c *RemoteConn) accepted(out *outbound, resp *http.Response, sent, cancel func()) {
	defer resp.Body.Close()
	if out.kind == framing.Notification && out.method == "notifications/initialized" {
		c.listen()
	}
	sent()
	pending := newPendingCalls(out.calls)
	if len(pending) == 0 {
		return // 202 Accepted for a notification or response
	}
	switch mediaType(resp) {
	case "application/json":
		c.readJSON(resp.Body, pending)
	case "text/event-stream":
		if c.readStream(resp.Body, pending) {
			drain(resp.Body, cancel)
		}
	default:
		c.log.Warn("the remote server answered with an unexpected content type", "url", c.logURL, "content_type", mediaType(resp))
		c.answerCalls(pending, "the upstream server answered with an unexpected content type")
	}
}

// refused handles a non-2xx answer to a POST after the first contact. The
// caller closes resp.Body.
func (c *RemoteConn) refused(out *outbound, resp *http.Response) {
	status, body := readErrorBody(resp)
	pending := newPendingCalls(out.calls)
	if answersCall(body, out) {
		if !c.deliverRaw(body, pending) {
			return
		}
		c.answerCalls(pending, "the upstream server's batch answer left this request out")
		return
	}
	if resp.StatusCode == http.StatusNotFound && c.hasSession() {
		c.fail(sessionMissing(resp.StatusCode))
		return
	}
	c.log.Warn("the remote server refused a message", "url", c.logURL, "method", out.method, "status", resp.StatusCode)
	c.failCalls(pending, c.statusError(http.MethodPost, status))
}

// readJSON delivers a JSON answer: one message, or a batch of them.
func (c *RemoteConn) readJSON(body io.Reader, pending pendingCalls) {
	data, err := io.ReadAll(io.LimitReader(body, int64(c.max)+1))
	switch {
	case err != nil:
		if c.usable() != nil {
			return
		}
		c.log.Warn("reading an answer from the remote server failed", "url", c.logURL, "error", err)
		c.failCalls(pending, fmt.Errorf("reading the answer to POST %s: %w", c.logURL, err))
		return
	case len(data) > c.max:
		rest, _ := io.Copy(io.Discard, body)
		head := bytes.Clone(data[:min(len(data), framing.HeadBytes)])
		if !c.deliverTooLong(&framing.LineTooLongError{Limit: c.max, Size: int64(len(data)) + rest, Head: head}, pending) {
			return
		}
	default:
		if !c.deliverRaw(data, pending) {
			return
		}
	}
	c.answerCalls(pending, "the upstream server's answer did not answer the request")
}

// readStream delivers the messages of an SSE answer until the requests in
// pending are answered. A stream the server ends early is resumed from its
// last event id (SEP-1699 lets a server close it and expect a GET with
// Last-Event-ID); when it cannot be, the requests get an error. It reports
// whether body answered them all, the rest of it unread.
func (c *RemoteConn) readStream(body io.Reader, pending pendingCalls) (answered bool) {
	sc := newSSEScanner(body, c.max)
	defer func() { sc.release() }() // the last one: each resumed stream's replaces it
	err := c.consume(sc, pending)
	if err == nil && len(pending) == 0 {
		return true
	}
	cause := streamCut(err)
	for failures := 0; len(pending) > 0 && sc.lastID != "" && c.usable() == nil; {
		if err != nil && !errors.Is(err, io.EOF) {
			c.log.Debug("response stream broken; resuming", "url", c.logURL, "error", err)
		}
		delay := sc.retry
		if delay == 0 || failures > 0 {
			delay = c.delay(failures)
		}
		if !c.wait(delay) {
			return
		}
		resp, gerr := c.streamGET(sc.lastID)
		if gerr != nil {
			cause = fmt.Errorf("resuming the response stream: %w", gerr)
			if failures++; failures >= maxStreamFailures {
				break
			}
			continue
		}
		if !success(resp) || mediaType(resp) != "text/event-stream" {
			c.log.Debug("the remote server refused to resume a response stream", "url", c.logURL, "status", resp.StatusCode)
			if !success(resp) {
				status, _ := readErrorBody(resp)
				cause = c.statusError(http.MethodGet, status)
			}
			resp.Body.Close()
			break
		}
		lastID, retry := sc.lastID, sc.retry
		sc.release()
		sc = newSSEScanner(resp.Body, c.max)
		sc.lastID, sc.retry = lastID, retry
		err = c.consume(sc, pending)
		cause = streamCut(err)
		resp.Body.Close()
		if sc.lastID == lastID {
			failures++ // no progress
		} else {
			failures = 0
		}
		if failures >= maxStreamFailures {
			break
		}
	}
	if c.usable() == nil {
		c.failCalls(pending, cause)
	}
	return false
}

// What drain reads at most, and waits for at most, of the rest of a POST's
// stream once its requests are answered.
const (
	drainBytes = 4 << 10
	drainWait  = 50 * time.Millisecond
)

// drain reads the rest of body, a POST's SSE stream whose requests are all
// answered, and drops it, so that its connection carries the next request:
// net/http closes the connection under a body closed before its end, and
// a server ends such a stream right after the last answer (the end of its
// chunked encoding follows). What comes after the answers is dropped, as
// it always was. A stream that goes on for longer than drainWait or
// drainBytes is left to cancel, which ends the request and its connection.
func drain(body io.Reader, cancel func()) {
	t := time.AfterFunc(drainWait, cancel)
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainBytes))
}

// streamCut is why a response stream that ended with err (io.EOF when the
// server ended it) left its requests unanswered: the connection's error, or
// for a stream the server ended, one that says so. Either way the answer
// was cut off in transit, which a new attempt may not meet: it wraps
// io.ErrUnexpectedEOF or the connection's typed error.
func streamCut(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("the response stream ended before the answer: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("the response stream broke before the answer: %w", err)
}

// consume delivers the message events of an SSE stream until it ends, the
// requests in pending (when not nil) are answered, or the connection ends.
// It returns the error that ended the stream (io.EOF at a clean end), or
// nil when it stopped for another reason.
func (c *RemoteConn) consume(sc *sseScanner, pending pendingCalls) error {
	for {
		ev, err := sc.next()
		if tooLong, ok := errors.AsType[*framing.LineTooLongError](err); ok {
			if !c.deliverTooLong(tooLong, pending) {
				return nil
			}
			if pending != nil && len(pending) == 0 {
				return nil
			}
			continue
		}
		if err != nil {
			return err
		}
		if ev.name != "message" || len(ev.data) == 0 {
			continue
		}
		if !c.deliverRaw(ev.data, pending) {
			return nil
		}
		if pending != nil && len(pending) == 0 {
			return nil
		}
	}
}

// streamGET opens an SSE stream with a GET: the standalone stream, or with
// lastID a resumed one.
func (c *RemoteConn) streamGET(lastID string) (*http.Response, error) {
	req, err := c.newRequest(c.ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return nil, err
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return c.do(req)
}

// listen starts the standalone GET stream once, for the server's own
// requests and notifications, unless the protocol version has none.
func (c *RemoteConn) listen() {
	c.mu.Lock()
	start := !c.listening && c.transport == TransportStreamableHTTP && c.version < era.StatelessVersion
	c.listening = c.listening || start
	c.mu.Unlock()
	if start {
		c.goAsync(c.runListen)
	}
}

// runListen keeps the standalone stream open: the server may end it at any
// time, and reopening it (resuming from its last event id) is the client's
// job. A server without one (405) is fine. Reconnects back off while
// streams fail, or end within quietStreamLife without progress (no event,
// no new event id), so a server that ends every stream at once is not
// polled twice a second; only failures end the connection.
func (c *RemoteConn) runListen() {
	sc := newSSEScanner(bytes.NewReader(nil), c.max) // carries lastID and retry across reconnects
	for failures, idle := 0, 0; ; {
		resp, err := c.streamGET(sc.lastID)
		switch {
		case err != nil:
			if c.usable() != nil {
				return
			}
			if failures++; failures > maxStreamFailures {
				c.fail(fmt.Errorf("the standalone SSE stream cannot be reopened: %w", err))
				return
			}
		case resp.StatusCode == http.StatusMethodNotAllowed:
			resp.Body.Close()
			c.log.Debug("the remote server offers no standalone SSE stream", "url", c.logURL)
			return
		case resp.StatusCode == http.StatusNotFound && c.hasSession():
			resp.Body.Close()
			c.fail(sessionMissing(resp.StatusCode))
			return
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
			resp.Body.Close()
			if failures++; failures > maxStreamFailures {
				c.fail(c.statusError(http.MethodGet, resilience.NewHTTPStatusError(resp)))
				return
			}
		case !success(resp) || mediaType(resp) != "text/event-stream":
			resp.Body.Close()
			c.log.Warn("the remote server refused the standalone SSE stream; its messages outside requests will be missed",
				"url", c.logURL, "status", resp.StatusCode)
			return
		default:
			failures = 0
			opened := time.Now()
			lastID, retry := sc.lastID, sc.retry
			sc = newSSEScanner(resp.Body, c.max)
			sc.lastID, sc.retry = lastID, retry
			err = c.consume(sc, nil)
			resp.Body.Close()
			if err != nil && !errors.Is(err, io.EOF) && c.usable() == nil {
				c.log.Debug("standalone SSE stream broken; reopening", "url", c.logURL, "error", err)
			}
			if sc.events == 0 && sc.lastID == lastID && time.Since(opened) < quietStreamLife {
				idle++
			} else {
				idle = 0
			}
		}
		if c.usable() != nil {
			return
		}
		delay := sc.retry
		if streak := failures + idle; delay == 0 || streak > 0 {
			delay = c.delay(streak)
		}
		if !c.wait(delay) {
			return
		}
	}
}

// endSession asks the server to end the session (DELETE), best effort.
func (c *RemoteConn) endSession() {
	c.mu.Lock()
	transport, session := c.transport, c.sessionID
	c.mu.Unlock()
	if transport != TransportStreamableHTTP || session == "" {
		return
	}
	if err := c.failErrIfFailed(); errors.Is(err, mcp.ErrSessionMissing) {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, closeDeleteTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodDelete, c.endpoint, nil)
	if err != nil {
		return
	}
	req.Header.Del("Accept")
	resp, err := c.do(req)
	if err != nil {
		c.log.Debug("ending the remote session failed", "url", c.logURL, "error", err)
		return
	}
	resp.Body.Close()
	if !success(resp) && resp.StatusCode != http.StatusMethodNotAllowed {
		c.log.Debug("the remote server refused to end the session", "url", c.logURL, "status", resp.StatusCode)
	}
}

// failErrIfFailed returns the connection's failure, or nil.
func (c *RemoteConn) failErrIfFailed() error {
	select {
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}
