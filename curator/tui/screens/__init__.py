"""Screens of the review app: the card, help, the set browser and small modals."""
