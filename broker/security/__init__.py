"""Authorization at the servicer edge: the request's principal (clients.grpc_server) checked
against the ACLs of this node's metadata image by kraft.security's StandardAuthorizer."""
