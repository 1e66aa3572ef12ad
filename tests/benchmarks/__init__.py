"""`make bench`: speed and memory figures. Prints them; asserts nothing about time."""
