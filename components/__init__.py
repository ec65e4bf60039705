"""Pulumi components for kaistack: one ComponentResource per module, type tokens `kaistack:index:<Name>`.

`platform.Platform` assembles them; `podspec` builds the workload manifests as plain dicts. Modules are
imported by name (`from components.platform import Platform`), never from here, so importing one
component does not load them all.
"""
