# A sensitive variable compiles to a reference to the environment variable
# its value comes from: the one its default reads, else its own name (with a
# warning naming the variable to set).
variable "gh_token" {
  sensitive = true
  default   = env("GITHUB_TOKEN")
}

variable "api" {
  sensitive = true
  default   = env("API_TOKEN")
}

variable "own_name" {
  sensitive = true
}

server "tools" {
  stdio {
    command = "tools-mcp"
    env     = { GH = var.gh_token, API = var.api, OWN = var.own_name }
  }
}
