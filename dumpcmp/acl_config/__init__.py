"""acl_config"""
