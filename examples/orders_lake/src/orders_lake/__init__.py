"""The orders lake: the streaming job's Delta sink and the columns it adds."""
