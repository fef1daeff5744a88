"""Small widgets of the review app."""
