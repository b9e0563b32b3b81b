"""Faults as data (spec), their schedule on observed progress, and the nemesis that carries them out."""
