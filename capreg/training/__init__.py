"""Fitting what serving reads (the learned stage, the query adapter) on the tuning splits,
and the cross-set checks that decide what is fitted."""
