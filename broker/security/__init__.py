"""Security at the servicer edge: listener protocols, TLS and SCRAM (who sent a request), which
principals may speak for which node, and authorization of the request's principal against the
ACLs of this node's metadata image (kraft.security's StandardAuthorizer)."""
