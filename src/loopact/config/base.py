"""What every configuration section shares (SPEC H1)."""

import pydantic

#: Every section refuses unknown keys, so a typo is an error that names the key.
STRICT = pydantic.ConfigDict(extra="forbid")
