import { useId } from 'react';

export interface FieldControlProps {
  id: string;
  'aria-describedby'?: string;
  'aria-invalid': boolean;
}

/**
 * A labelled form control with an optional hint and an inline error. The hint and the error are tied
 * to the control with aria-describedby, so the label stays exactly the label.
 */
export function Field(props: {
  label: string;
  hint?: string;
  error?: string;
  children: (control: FieldControlProps) => React.ReactNode;
}) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  const describedBy = [errorId, hintId].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field${props.error ? ' invalid' : ''}`}>
      <label htmlFor={id}>{props.label}</label>
      {props.children({ id, 'aria-describedby': describedBy, 'aria-invalid': !!props.error })}
      {props.hint && !props.error && (
        <small id={hintId} className="muted">
          {props.hint}
        </small>
      )}
      {props.error && (
        <small id={errorId} className="error" role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}
