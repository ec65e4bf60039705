"""Read-only access to a live Kubernetes API (clients from a kubeconfig or context)."""
