"""kaistack: a GPU-sharing Kubernetes platform from one Pulumi stack declaration."""

__version__ = "0.1.0"
