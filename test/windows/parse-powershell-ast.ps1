# Parses scripts with PowerShell's own parser and reports what a quoting check needs: the parse
# errors, the kind of every token of the whole script (a breakout anywhere, in a block as much as
# at the top, adds or changes tokens), the number of top-level statements, and for each top-level
# `$Name = ...` the shape of its right-hand side ('string' for one string constant, 'list' for
# @(...) of string constants, else the syntax node's type) with its string constants (kind and value).
# One process serves many batches: each line on standard input is one batch, the scripts as the
# base64 of their UTF-16LE text separated by commas, and each answer is one JSON line. Texts and
# values travel as UTF-16 code units because UTF-8 (and ConvertFrom-Json) would replace a lone
# surrogate with U+FFFD, and the check is of the exact characters. The shapes are read by hand:
# Ast.FindAll calls a script block per node and took ~0.4 s per batch.
$ErrorActionPreference = 'Stop'
# A failure of the checker itself reaches the test's stderr as plain text.
$PSStyle.OutputRendering = 'PlainText'
$reader = [System.IO.StreamReader]::new([Console]::OpenStandardInput(), [System.Text.UTF8Encoding]::new($false))
$writer = [System.IO.StreamWriter]::new([Console]::OpenStandardOutput(), [System.Text.UTF8Encoding]::new($false))

function ConvertFrom-Utf16Base64([string]$encoded) {
  $bytes = [Convert]::FromBase64String($encoded)
  $chars = [char[]]::new($bytes.Length / 2)
  [Buffer]::BlockCopy($bytes, 0, $chars, 0, $bytes.Length)
  [string]::new($chars)
}

function ConvertTo-Utf16Base64([string]$text) {
  $bytes = [byte[]]::new($text.Length * 2)
  [Buffer]::BlockCopy($text.ToCharArray(), 0, $bytes, 0, $bytes.Length)
  [Convert]::ToBase64String($bytes)
}

function Get-StringConstant($ast) {
  [pscustomobject]@{ kind = [string]$ast.StringConstantType; utf16 = (ConvertTo-Utf16Base64 $ast.Value) }
}

# 'string' is `$x = '...'`; 'list' is `$x = @('...', ...)` (one pipeline of one expression that is
# a string constant or an array literal of them). Anything else is named by its node types.
function Get-Shape($right) {
  $expression = if ($right -is [System.Management.Automation.Language.CommandExpressionAst]) { $right.Expression } else { $null }
  if ($expression -is [System.Management.Automation.Language.StringConstantExpressionAst]) {
    return [pscustomobject]@{ shape = 'string'; strings = @(Get-StringConstant $expression) }
  }
  if ($expression -is [System.Management.Automation.Language.ArrayExpressionAst] -and $expression.SubExpression.Statements.Count -eq 1 -and $expression.SubExpression.Traps.Count -eq 0) {
    $pipeline = $expression.SubExpression.Statements[0]
    if ($pipeline -is [System.Management.Automation.Language.PipelineAst] -and $pipeline.PipelineElements.Count -eq 1 -and $pipeline.PipelineElements[0] -is [System.Management.Automation.Language.CommandExpressionAst] -and $pipeline.PipelineElements[0].Redirections.Count -eq 0) {
      $inner = $pipeline.PipelineElements[0].Expression
      $elements = if ($inner -is [System.Management.Automation.Language.ArrayLiteralAst]) { @($inner.Elements) } else { @($inner) }
      if (@($elements | Where-Object { $_ -isnot [System.Management.Automation.Language.StringConstantExpressionAst] }).Count -eq 0) {
        return [pscustomobject]@{ shape = 'list'; strings = @($elements | ForEach-Object { Get-StringConstant $_ }) }
      }
    }
  }
  $type = if ($null -ne $expression) { $expression.GetType().Name } else { $right.GetType().Name }
  [pscustomobject]@{ shape = $type; strings = @() }
}

while ($null -ne ($line = $reader.ReadLine())) {
  $answers = foreach ($encoded in $line.Split(',')) {
    $text = ConvertFrom-Utf16Base64 $encoded
    $tokens = $null
    $errors = $null
    $ast = [System.Management.Automation.Language.Parser]::ParseInput($text, [ref]$tokens, [ref]$errors)
    $statements = @($ast.EndBlock.Statements)
    $assignments = foreach ($statement in $statements) {
      if ($statement -isnot [System.Management.Automation.Language.AssignmentStatementAst]) { continue }
      if ($statement.Left -isnot [System.Management.Automation.Language.VariableExpressionAst]) { continue }
      $shape = Get-Shape $statement.Right
      [pscustomobject]@{ name = $statement.Left.VariablePath.UserPath; shape = $shape.shape; strings = $shape.strings }
    }
    [pscustomobject]@{
      errors = @($errors | ForEach-Object { '{0} at {1}:{2}' -f $_.ErrorId, $_.Extent.StartLineNumber, $_.Extent.StartColumnNumber })
      # Member enumeration: no script block per token.
      tokens = (@($tokens).Kind -join ' ')
      statements = $statements.Count
      assignments = @($assignments)
    }
  }
  $writer.WriteLine((ConvertTo-Json -InputObject @($answers) -Compress -Depth 8))
  $writer.Flush()
}
