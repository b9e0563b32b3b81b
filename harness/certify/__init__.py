"""Certification: the matrix, a row run as a scenario, the spread over workers, the certificate."""
