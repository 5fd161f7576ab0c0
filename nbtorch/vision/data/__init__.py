"""Data files shipped with nbtorch.vision (``digits.csv.gz``: see ``DIGITS_LICENSE.txt``)."""
