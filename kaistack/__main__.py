import sys

from kaistack.cli import main

sys.exit(main())
