"""What the runs layer tells the layers above it, without importing them."""

from django.dispatch import Signal

# Sent inside the transaction that ends a run (completed, rejected, failed, …), with
# ``run=``; a receiver that does work outside the database does it on commit.
run_finished = Signal()
