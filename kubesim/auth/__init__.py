"""Authentication and authorization: who sent a request (bearer tokens, client certificates, impersonation)
and whether RBAC lets them (upstream `plugin/pkg/auth/authorizer/rbac/rbac.go`), plus the bootstrap roles and
ClusterRole aggregation. Used by the server's middleware and by the review handlers."""
