"""The user-facing pkernels API: types, spaces, policies, views, decorators."""
