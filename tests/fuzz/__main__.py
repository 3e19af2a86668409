"""`python -m tests.fuzz --backend eager --count 10000 --seed 0`: see campaign.py."""

import sys

from tests.fuzz.campaign import main

sys.exit(main())
