package framing

// PeekHead reads the envelope of a message from its head, its first bytes,
// when the message is too long to hold whole (see [Reader.ReadHead]), so
// that a relay can route it before the rest has arrived. It reports ok
// only when the head settles what the message is: a JSON object whose
// routing members, each spelled once and exactly, are complete in the head
// and followed by the one member that runs past it, which must be
// "result" or "error" after an "id" and no "method" (a response), or
// "params" after an "id" and a "method" (a request). No head shows that a
// message is a notification: its "id" may come last.
// Env then holds the members read, and Result, Error or Params the part
// of that member's value the head holds.
//
// What follows the head is not seen: a relay that routes on the head has
// not checked that the rest is valid JSON, nor that it spells no routing
// member again (see MemberWatch). A message whose head settles nothing
// (say its "id" comes last) must be read whole.
func PeekHead(head []byte) (env Envelope, ok bool) {
	i := skipSpace(head, 0)
	if i == len(head) || head[i] != '{' {
		return env, false
	}
	var method []byte
	for i = skipSpace(head, i+1); ; {
		key, start, err := memberKey(head, i, true)
		if err != nil {
			return env, false
		}
		end, err := validNested(head, start, 1)
		next := len(head)
		if err == nil {
			next = skipSpace(head, end)
		}
		if next == len(head) { // this member runs past the head
			part := head[start:]
			switch string(key) {
			case "result", "error":
				if env.ID == nil || method != nil || env.Result != nil || env.Error != nil {
					return env, false
				}
				env.Kind = Response
				if string(key) == "result" {
					env.Result = part
				} else {
					env.Error = part
				}
			case "params":
				// Without an id it may yet be a request: no head settles that
				// a message is a notification.
				if method == nil || env.ID == nil || env.Params != nil || env.Result != nil || env.Error != nil {
					return env, false
				}
				if env.Method, err = String(method); err != nil {
					return env, false
				}
				env.Kind, env.Params = Request, part
			default:
				return env, false
			}
			return env, true
		}
		if head[next] != ',' { // the message ends in its head: it is no long message
			return env, false
		}
		val := head[start:end]
		var slot *[]byte
		switch string(key) {
		case "id":
			slot = &env.ID
		case "method":
			slot = &method
		case "params":
			slot = &env.Params
		case "result":
			slot = &env.Result
		case "error":
			slot = &env.Error
		default:
			if routingVariant(key) != "" {
				return env, false
			}
		}
		if slot != nil {
			if *slot != nil {
				return env, false
			}
			*slot = val
		}
		i = skipSpace(head, next+1)
	}
}
