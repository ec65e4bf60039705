"""One module per `kaistack` subcommand.

Each module exposes `register(subparsers)`, which adds its parser and sets `func` to a callable
`(argparse.Namespace) -> int` (the exit code). Modules import nothing heavy (pulumi, grpc) at import
time, so `kaistack --help` and `kaistack simulate` stay fast.
"""
